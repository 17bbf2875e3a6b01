import * as tf from '@tensorflow/tfjs-core';
import type { ParamStore } from '../params.ts';
import { convs2sGlu } from './convs2s-glu-conv.ts';
import { dynamicConv, dynamicConvStep } from './dynamic-conv.ts';
import { dense } from './feed-forward.ts';

/** Whether the kernels are one per head (lightweight) or predicted from each position's input (dynamic). */
export type ConvKind = 'lightweight' | 'dynamic';

/**
 * The convolution block of Wu et al. (2019), fairseq's LightConvEncoderLayer / LightConvDecoderLayer up to the
 * residual (which the model adds, with dropout and the layer norm):
 *
 *   u = x Win + bin                        [.., d] → [.., 2d] with glu, [.., d] without
 *   u = GLU(u) = u[:d] ⊙ σ(u[d:])          (with glu)
 *   u = u ⊙ mask                           (encoder: padded source positions zeroed, as fairseq's masked_fill)
 *   w = softmax_K(kernel)                  lightweight: kernel [H, K], one per head
 *     = softmax_K(u Wkernel)               dynamic: Wkernel [d, H·K], no bias, a kernel per position [B, T, H, K]
 *   w = DropConnect(w)                     (training: dropout on the normalised weights, rate weightDropout)
 *   y = conv(u, w) Wout + bout             models/layers/dynamic-conv.ts
 *
 * fairseq's LightweightConv1dTBC and DynamicConv1dTBC are built with bias=False (and conv_bias=False there), so the
 * convolution itself has none; both projections have one.
 */
export interface ConvBlockWeights {
  name: string;
  kind: ConvKind;
  heads: number;
  /** K, the kernel width. */
  width: number;
  glu: boolean;
  Win: tf.Variable;
  bin: tf.Variable;
  /** lightweight: the kernels [H, K]; dynamic: the projection [d, H·K] that predicts them. */
  kernel: tf.Variable;
  Wout: tf.Variable;
  bout: tf.Variable;
}

export interface ConvBlockShape {
  kind: ConvKind;
  d: number;
  heads: number;
  width: number;
  glu: boolean;
}

export function createConvBlock(p: ParamStore, name: string, s: ConvBlockShape): ConvBlockWeights {
  const { d, heads: H, width: K } = s;
  if (d % H !== 0) throw new RangeError(`convolution: the model size ${d} is not a multiple of ${H} heads`);
  const glorot = { kind: 'glorot-uniform' } as const;
  const zeros = { kind: 'zeros' } as const;
  // fairseq: xavier_uniform on the [H, 1, K] kernel (fan-in K, fan-out H·K); the projections are xavier Linears.
  const kernel =
    s.kind === 'lightweight'
      ? p.variable(`${name}/kernel`, [H, K], { kind: 'uniform', limit: Math.sqrt(6 / (K + H * K)) })
      : p.variable(`${name}/kernel`, [d, H * K], glorot);
  return {
    name,
    kind: s.kind,
    heads: H,
    width: K,
    glu: s.glu,
    Win: p.variable(`${name}/Win`, [d, s.glu ? 2 * d : d], glorot),
    bin: p.variable(`${name}/bin`, [s.glu ? 2 * d : d], zeros),
    kernel,
    Wout: p.variable(`${name}/Wout`, [d, d], glorot),
    bout: p.variable(`${name}/bout`, [d], zeros),
  };
}

/** The convolution's input: the input projection, then GLU (with glu). x [..., d] → [..., d]. */
export function convInput<T extends tf.Tensor>(w: ConvBlockWeights, x: T): T {
  const u = dense(x, w.Win, w.bin) as T;
  return w.glu ? convs2sGlu(u) : u;
}

/**
 * The normalised kernels: [H, K] (lightweight), or for conv inputs u [..., d] one per position [..., H, K]
 * (dynamic). `dropConnect` applies to them (training); identity otherwise.
 */
export function convKernels(w: ConvBlockWeights, u: tf.Tensor, dropConnect: (k: tf.Tensor) => tf.Tensor): tf.Tensor {
  if (w.kind === 'lightweight') return dropConnect(tf.softmax(w.kernel));
  const d = w.kernel.shape[0]!;
  const flat = tf.matMul(tf.reshape(u, [u.size / d, d]) as tf.Tensor2D, w.kernel as tf.Tensor2D);
  return dropConnect(tf.softmax(tf.reshape(flat, [...u.shape.slice(0, -1), w.heads, w.width])));
}

/**
 * The block over a whole sequence x [B, T, d] → [B, T, d], the convolution padded by `padLeft` steps before
 * (K − 1: causal, the decoder) and K − 1 − padLeft after. `mask` [B, T] (the encoder's padding) zeroes the padded
 * positions of the convolution's input.
 */
export function convBlock(
  w: ConvBlockWeights,
  x: tf.Tensor3D,
  padLeft: number,
  mask: tf.Tensor2D | null,
  dropConnect: (k: tf.Tensor) => tf.Tensor,
): tf.Tensor3D {
  return tf.tidy(() => {
    let u = convInput(w, x);
    if (mask) u = tf.mul(u, tf.expandDims(mask, 2));
    const y = dynamicConv(u, convKernels(w, u, dropConnect), padLeft);
    return dense(y, w.Wout, w.bout) as tf.Tensor3D;
  });
}

/**
 * One decoding step of the causal block: x [N, d] → y [N, d], reading and returning the window of the last K − 1
 * convolution inputs ([N, K − 1, d], oldest first; none when K = 1).
 */
export function convBlockStep(
  w: ConvBlockWeights,
  window: tf.Tensor3D | undefined,
  x: tf.Tensor2D,
): { y: tf.Tensor2D; window?: tf.Tensor3D } {
  const u = convInput(w, x);
  const step = dynamicConvStep(
    window,
    u,
    convKernels(w, u, (k) => k),
  );
  return { y: dense(step.y, w.Wout, w.bout) as tf.Tensor2D, ...(step.window ? { window: step.window } : {}) };
}
