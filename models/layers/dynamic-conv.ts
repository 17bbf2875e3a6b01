import * as tf from '@tensorflow/tfjs-core';
import { fusedMode, runFused } from './fused.ts';

/**
 * The convolution of Wu et al. (2019) over time, per head: y[b,t,c] = Σ_k w[·,h,k] · x[b, t+k−padLeft, c], with
 * h = ⌊c / (C/H)⌋ and x zero outside [0, T). The kernel of one head is shared by the C/H channels of that head.
 * Its weights are either one kernel per head, w [H, K] (a lightweight convolution), or one per time step,
 * w [B, T, H, K] (a dynamic convolution, the kernel predicted from x[b,t]); the callers softmax-normalise and
 * DropConnect them first. padLeft = K − 1 makes it causal (the decoder), ⌊K/2⌋ (odd K) centred (the encoder).
 *
 * One fused op with its own gradient (models/layers/fused.ts), because the two obvious expressions are slow:
 * fairseq's training path builds a T×T band matrix per layer (quadratic in T), and a sum of K shifted slices
 * records 3K ops forward and more backward. Kernel contract:
 *
 *   FrostDynamicConv      inputs x [B, T, C], weights [H, K] or [B, T, H, K]; attr padLeft (0 ≤ padLeft < K)
 *                         output y [B, T, C]
 *   FrostDynamicConvGrad  inputs dy [B, T, C], x, weights; attr padLeft
 *                         outputs dx [B, T, C] = Σ_k w[b,t−k+padLeft,h,k] · dy[b, t−k+padLeft, c],
 *                         dweights (weights' shape) = Σ_{c in h} dy[b,t,c] · x[b, t+k−padLeft, c]
 *                         (summed over b and t for [H, K] weights)
 *
 * Both cost O(B·T·C·K): linear in T·K. frost's wasm kernels (train/backend/kernels/dynamic-conv.ts) compute them
 * in SIMD over the heap; elsewhere the same contract runs as the tfjs ops below (K shifted slices), and with
 * fused mode 'unfused' those ops run under plain autodiff (what the tests compare the kernels to).
 */
export const DYNAMIC_CONV_KERNEL = 'FrostDynamicConv';
export const DYNAMIC_CONV_GRAD_KERNEL = 'FrostDynamicConvGrad';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/** H and K of a weights tensor, checked against x [B, T, C]. */
export function convShape(
  x: readonly number[],
  weights: readonly number[],
  padLeft: number,
): { B: number; T: number; C: number; H: number; K: number; shared: boolean } {
  const [B, T, C] = x as [number, number, number];
  if (x.length !== 3) throw new RangeError(`dynamic conv: x must be [B, T, C], got [${x.join(', ')}]`);
  const shared = weights.length === 2;
  if (!shared && weights.length !== 4)
    throw new RangeError(`dynamic conv: weights must be [H, K] or [B, T, H, K], got [${weights.join(', ')}]`);
  const [H, K] = weights.slice(-2) as [number, number];
  if (!shared && (weights[0] !== B || weights[1] !== T))
    throw new RangeError(`dynamic conv: weights [${weights.join(', ')}] do not match x [${x.join(', ')}]`);
  if (C % H !== 0) throw new RangeError(`dynamic conv: ${C} channels do not split into ${H} heads`);
  checkPadLeft(padLeft, K);
  return { B, T, C, H, K, shared };
}

/** padLeft must leave the window inside the kernel: 0 ≤ padLeft < K (the tfjs op, the kernels and the ONNX form). */
export function checkPadLeft(padLeft: number, K: number): void {
  if (!(Number.isInteger(padLeft) && padLeft >= 0 && padLeft < K))
    throw new RangeError(`dynamic conv: padLeft must be an integer in [0, ${K}), got ${padLeft}`);
}

/** Weight k of every position as a tensor that broadcasts over x viewed as [B, T, H, C/H]. */
function weightAt(weights: tf.Tensor, k: number, shared: boolean): tf.Tensor {
  if (shared) return tf.slice(weights, [0, k], [weights.shape[0]!, 1]); // [H, 1]
  const [B, T, H] = weights.shape as [number, number, number];
  return tf.slice(weights, [0, 0, 0, k], [B, T, H, 1]);
}

/** x [B, T, C] padded in time with padLeft zeros before and K − 1 − padLeft after: [B, T + K − 1, C]. */
function padTime(x: tf.Tensor, padLeft: number, K: number): tf.Tensor3D {
  return tf.pad(x, [
    [0, 0],
    [padLeft, K - 1 - padLeft],
    [0, 0],
  ]) as tf.Tensor3D;
}

/** FrostDynamicConv as tfjs ops: the sum of K shifted slices of the padded input, each scaled by its weight. */
export function dynamicConvOps(x: tf.Tensor, weights: tf.Tensor, padLeft: number): tf.Tensor[] {
  const { B, T, C, H, K, shared } = convShape(x.shape, weights.shape, padLeft);
  const padded = padTime(x, padLeft, K);
  let y: tf.Tensor = tf.zeros([B, T, H, C / H]);
  for (let k = 0; k < K; k++) {
    const shifted = tf.reshape(tf.slice(padded, [0, k, 0], [B, T, C]), [B, T, H, C / H]);
    y = tf.add(y, tf.mul(shifted, weightAt(weights, k, shared)));
  }
  return [tf.reshape(y, [B, T, C])];
}

/** FrostDynamicConvGrad as tfjs ops. */
export function dynamicConvGradOps(dy: tf.Tensor, x: tf.Tensor, weights: tf.Tensor, padLeft: number): tf.Tensor[] {
  const { B, T, C, H, K, shared } = convShape(x.shape, weights.shape, padLeft);
  const R = C / H;
  const padded = padTime(x, padLeft, K);
  const dyHeads = tf.reshape(dy, [B, T, H, R]);
  let dPadded: tf.Tensor = tf.zeros([B, T + K - 1, C]);
  const dWeights: tf.Tensor[] = [];
  for (let k = 0; k < K; k++) {
    // y[t] read padded[t + k]: its gradient goes back to padded[t + k], and the weight's to Σ_c dy·padded.
    const scaled = tf.reshape(tf.mul(dyHeads, weightAt(weights, k, shared)), [B, T, C]);
    dPadded = tf.add(
      dPadded,
      tf.pad(scaled, [
        [0, 0],
        [k, K - 1 - k],
        [0, 0],
      ]),
    );
    const shifted = tf.reshape(tf.slice(padded, [0, k, 0], [B, T, C]), [B, T, H, R]);
    const perStep = tf.sum(tf.mul(dyHeads, shifted), 3); // [B, T, H]
    dWeights.push(shared ? tf.sum(tf.reshape(perStep, [B * T, H]), 0) : perStep);
  }
  const dx = tf.slice(dPadded, [0, padLeft, 0], [B, T, C]);
  return [dx, tf.stack(dWeights, shared ? 1 : 3)];
}

/**
 * y [B, T, C] of x [B, T, C] convolved with weights [H, K] (lightweight) or [B, T, H, K] (dynamic), the input
 * zero-padded by padLeft steps before and K − 1 − padLeft after; differentiable in x and the weights.
 */
export function dynamicConv(x: tf.Tensor3D, weights: tf.Tensor, padLeft: number): tf.Tensor3D {
  convShape(x.shape, weights.shape, padLeft);
  if (fusedMode() === 'unfused') return tf.tidy(() => dynamicConvOps(x, weights, padLeft)[0] as tf.Tensor3D);
  const attrs = { padLeft };
  const op = tf.customGrad(((xs: tf.Tensor, w: tf.Tensor, save: tf.GradSaveFunc) => {
    const [y] = runFused(DYNAMIC_CONV_KERNEL, { x: xs, weights: w }, () => dynamicConvOps(xs, w, padLeft), attrs);
    save([xs, w]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, [savedX, savedW]: tf.Tensor[]) =>
        runFused(
          DYNAMIC_CONV_GRAD_KERNEL,
          { dy, x: savedX, weights: savedW },
          () => dynamicConvGradOps(dy, savedX!, savedW!, padLeft),
          attrs,
        ),
    };
  }) as unknown as CustomGradFn);
  return op(x, weights) as tf.Tensor3D;
}

/**
 * One decoding step of the causal convolution: the new input x [N, C] joins the window of the K − 1 inputs
 * before it ([N, K − 1, C], oldest first; absent when K = 1), and y [N, C] = Σ_k w[n,h,k] · full[n,k,c] with
 * weights [H, K] or [N, H, K]. Returns the window for the next step (the last K − 1 inputs). A step costs the
 * same at every position; the window starts as zeros, which is the causal padding.
 */
export function dynamicConvStep(
  window: tf.Tensor3D | undefined,
  x: tf.Tensor2D,
  weights: tf.Tensor,
): { y: tf.Tensor2D; window?: tf.Tensor3D } {
  const [N, C] = x.shape;
  const [H, K] = weights.shape.slice(-2) as [number, number];
  const R = C / H;
  const full = window ? tf.concat([window, tf.expandDims(x, 1)], 1) : tf.expandDims(x, 1); // [N, K, C]
  if (full.shape[1] !== K)
    throw new RangeError(`dynamic conv step: a window of ${full.shape[1]! - 1} inputs for a kernel of width ${K}`);
  const byHead = tf.transpose(tf.reshape(full, [N, K, H, R]), [0, 2, 1, 3]); // [N, H, K, R]
  const w = weights.rank === 2 ? tf.broadcastTo(weights, [N, H, K]) : weights;
  const y = tf.reshape(tf.matMul(tf.reshape(w, [N, H, 1, K]) as tf.Tensor4D, byHead as tf.Tensor4D), [N, C]);
  return { y: y as tf.Tensor2D, window: K > 1 ? (tf.slice(full, [0, 1, 0], [N, K - 1, C]) as tf.Tensor3D) : undefined };
}
