import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { checkPadLeft } from './dynamic-conv.ts';

/**
 * ONNX of the convolution of models/layers/dynamic-conv.ts, in standard opset-18 operators (onnxruntime-web runs
 * them): y[b,t,c] = Σ_k w[·,h,k] · x[b, t+k−padLeft, c], h = ⌊c / (C/H)⌋, x zero outside [0, T).
 */
export interface DynamicConvOnnxShape {
  /** C, the channels of x. */
  channels: number;
  /** H, the heads the channels split into (C/H channels share one kernel). */
  heads: number;
  /** K, the kernel width. */
  width: number;
  /** Weights per position ([B, T, H, K], or [N, H, K] for a step) rather than one kernel per head ([H, K]). */
  dynamic: boolean;
}

function checkShape(s: DynamicConvOnnxShape): void {
  if (s.channels % s.heads !== 0)
    throw new RangeError(`dynamic conv: ${s.channels} channels do not split into ${s.heads} heads`);
}

/**
 * The whole sequence, x [B, T, C] → y [B, T, C] with T dynamic; `weights` names [H, K] or [B, T, H, K] values.
 * Two forms, each the fastest in onnxruntime of those measured for its weights (CPU, one and all threads,
 * B 1–16, T 30–40, C 256–512, K 3–31: K shifted slices (3K nodes), a Gather unfold to [B, T, K, C] with a MatMul
 * or a Mul and ReduceSum, the forms below; the slices won only at K = 3, by ~20%):
 *   [H, K]: a depthwise Conv (group C) of the kernel of each channel's head, 1.5–20× faster than the rest;
 *   [B, T, H, K]: heads first, a Gather unfold and a batched MatMul (below), 1.5–3× faster than the rest.
 */
export function dynamicConvOnnx(
  g: GraphBuilder,
  x: string,
  weights: string,
  shape: DynamicConvOnnxShape,
  padLeft: number,
): string {
  checkShape(shape);
  checkPadLeft(padLeft, shape.width);
  return shape.dynamic
    ? perPositionConvOnnx(g, x, weights, shape, padLeft)
    : depthwiseConvOnnx(g, x, weights, shape, padLeft);
}

/**
 * y = Conv(xᵀ, w_c, group = C)ᵀ, where channel c's kernel w_c [1, K] is its head's: [H, K] repeated C/H times per
 * head to [C, 1, K] (the Expand of an initializer, which onnxruntime folds when it loads the graph).
 */
function depthwiseConvOnnx(
  g: GraphBuilder,
  x: string,
  weights: string,
  shape: DynamicConvOnnxShape,
  padLeft: number,
): string {
  const { channels: C, heads: H, width: K } = shape;
  const perHead = g.op('Reshape', [weights, g.constInt64([H, 1, 1, K])]);
  const perChannel = g.op('Reshape', [
    g.op('Expand', [perHead, g.constInt64([H, C / H, 1, K])]),
    g.constInt64([C, 1, K]),
  ]);
  const y = g.op('Conv', [g.op('Transpose', [x], { perm: [0, 2, 1] }), perChannel], {
    group: C,
    kernel_shape: [K],
    pads: [padLeft, K - 1 - padLeft],
  });
  return g.op('Transpose', [y], { perm: [0, 2, 1] });
}

/**
 * Weights per position, with the heads first so that the K-fold unfold is never transposed:
 *   xh = x as [B, H, T, C/H], padded in time by padLeft before and K − 1 − padLeft after
 *   cols[b,h,t,k,:] = xh[b, h, t+k, :]   (a Gather of the index grid t + k)      [B, H, T, K, C/H]
 *   y[b,h,t,:] = w[b,t,h,:] · cols[b,h,t,:,:]   (a batched MatMul, 1×K by K×C/H)
 */
function perPositionConvOnnx(
  g: GraphBuilder,
  x: string,
  weights: string,
  shape: DynamicConvOnnxShape,
  padLeft: number,
): string {
  const { channels: C, heads: H, width: K } = shape;
  const R = C / H;
  const heads = g.op('Transpose', [g.op('Reshape', [x, g.constInt64([0, 0, H, R])])], { perm: [0, 2, 1, 3] });
  const padded = g.op('Pad', [heads, g.constInt64([0, 0, padLeft, 0, 0, 0, K - 1 - padLeft, 0])]);
  // The index grid t + k: Range(T) as a column plus Range(K) as a row.
  const T = g.squeeze(g.slice(g.op('Shape', [x]), [1], [2], [0]), [0]);
  const steps = g.op('Range', [g.constInt64(0), T, g.constInt64(1)]);
  const grid = g.op('Add', [g.unsqueeze(steps, [1]), g.constInt64(range(K), [1, K])]); // [T, K]
  const cols = g.op('Gather', [padded, grid], { axis: 2 });
  const w = g.unsqueeze(g.op('Transpose', [weights], { perm: [0, 2, 1, 3] }), [3]); // [B, H, T, 1, K]
  const y = g.op('Reshape', [g.op('MatMul', [w, cols]), g.constInt64([0, H, -1, R])]); // [B, H, T, C/H]
  return g.op('Reshape', [g.op('Transpose', [y], { perm: [0, 2, 1, 3] }), g.constInt64([0, 0, C])]);
}

/**
 * One causal decoding step (dynamicConvStep's ONNX): x [N, C] joins `window` [N, K−1, C] (the K − 1 inputs before
 * it, oldest first; absent when K = 1); weights [H, K] or [N, H, K].
 *   full = Concat(window, x)                                  [N, K, C]
 *   y[n,h,:] = w[n,h,:] · full[n,:,h,:]                        [N, C]
 *   next window = full[:, 1:]                                  [N, K−1, C]
 * A step costs the same at every position.
 */
export function dynamicConvStepOnnx(
  g: GraphBuilder,
  window: string | undefined,
  x: string,
  weights: string,
  shape: DynamicConvOnnxShape,
): { y: string; window?: string } {
  checkShape(shape);
  const { channels: C, heads: H, width: K } = shape;
  const R = C / H;
  if (K === 1) {
    const scale = g.op('Reshape', [weights, g.constInt64(shape.dynamic ? [0, H, 1] : [H, 1])]);
    const y = g.op('Mul', [g.op('Reshape', [x, g.constInt64([0, H, R])]), scale]);
    return { y: g.op('Reshape', [y, g.constInt64([0, C])]) };
  }
  if (window === undefined) throw new Error(`dynamic conv: a width-${K} step needs its window of ${K - 1} inputs`);
  const full = g.op('Concat', [window, g.unsqueeze(x, [1])], { axis: 1 });
  const byHead = g.op('Transpose', [g.op('Reshape', [full, g.constInt64([0, K, H, R])])], { perm: [0, 2, 1, 3] });
  const w = g.op('Reshape', [weights, g.constInt64(shape.dynamic ? [0, H, 1, K] : [H, 1, K])]);
  const y = g.op('Reshape', [g.op('MatMul', [w, byHead]), g.constInt64([0, C])]);
  return { y, window: g.slice(full, [1], [Number.MAX_SAFE_INTEGER], [1]) };
}

/** The window a decoder starts from: zeros [B, steps, C] (the causal padding); `batch` names a 1-D int64 [B]. */
export function zeroWindowOnnx(g: GraphBuilder, batch: string, steps: number, channels: number): string {
  const shape = g.op('Concat', [batch, g.constInt64([steps, channels])], { axis: 0 });
  return g.op('ConstantOfShape', [shape], { value: { dtype: 'float32', dims: [1], data: new Float32Array([0]) } });
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
