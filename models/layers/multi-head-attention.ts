import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder, TensorValue } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import type { ParamStore } from '../params.ts';
import { dense } from './feed-forward.ts';

/**
 * Scaled dot-product attention with h heads (Vaswani et al. §3.2): queries, keys and values are
 * projected to h heads of d/h, each head attends softmax(q kᵀ / √(d/h) + bias) v, and the heads'
 * outputs are concatenated and projected back to d. Keys and values are kept split into heads,
 * [B, h, L, d/h], the layout of the decoder's key/value cache.
 */
export interface MultiHeadAttentionWeights {
  name: string;
  heads: number;
  d: number;
  Wq: tf.Variable;
  bq: tf.Variable;
  Wk: tf.Variable;
  bk: tf.Variable;
  Wv: tf.Variable;
  bv: tf.Variable;
  Wo: tf.Variable;
  bo: tf.Variable;
}

export type Projection = 'q' | 'k' | 'v';

/** Added to the scores of masked keys (padding, the future); finite so that softmax stays defined. */
export const MASKED_KEY_BIAS = -1e9;

export function createMultiHeadAttention(
  p: ParamStore,
  name: string,
  d: number,
  heads: number,
): MultiHeadAttentionWeights {
  if (d % heads !== 0) throw new RangeError(`attention: the model size ${d} is not a multiple of ${heads} heads`);
  const matrix = (n: string) => p.variable(`${name}/${n}`, [d, d], { kind: 'glorot-uniform' });
  const bias = (n: string) => p.variable(`${name}/${n}`, [d], { kind: 'zeros' });
  return {
    name,
    heads,
    d,
    Wq: matrix('Wq'),
    bq: bias('bq'),
    Wk: matrix('Wk'),
    bk: bias('bk'),
    Wv: matrix('Wv'),
    bv: bias('bv'),
    Wo: matrix('Wo'),
    bo: bias('bo'),
  };
}

function projectionWeights(w: MultiHeadAttentionWeights, which: Projection): [tf.Variable, tf.Variable] {
  if (which === 'q') return [w.Wq, w.bq];
  if (which === 'k') return [w.Wk, w.bk];
  return [w.Wv, w.bv];
}

/** x [B, L, d] projected and split into heads: [B, h, L, d/h]. */
export function projectHeads(w: MultiHeadAttentionWeights, which: Projection, x: tf.Tensor3D): tf.Tensor4D {
  const [B, L] = x.shape;
  const [W, b] = projectionWeights(w, which);
  const y = tf.reshape(dense(x, W, b), [B, L, w.heads, w.d / w.heads]);
  return tf.transpose(y, [0, 2, 1, 3]) as tf.Tensor4D;
}

/**
 * Attention of queries x [B, Lq, d] over keys and values [B, h, Lk, d/h] already split into heads;
 * `bias` broadcasts to the scores [B, h, Lq, Lk]; `dropout` applies to the attention weights.
 * Returns [B, Lq, d] after the output projection.
 */
export function attendHeads(
  w: MultiHeadAttentionWeights,
  x: tf.Tensor3D,
  keys: tf.Tensor4D,
  values: tf.Tensor4D,
  bias: tf.Tensor | null,
  dropout: (a: tf.Tensor4D) => tf.Tensor4D,
): tf.Tensor3D {
  return tf.tidy(() => {
    const [B, Lq] = x.shape;
    const q = projectHeads(w, 'q', x);
    let scores = tf.mul(tf.matMul(q, keys, false, true), 1 / Math.sqrt(w.d / w.heads)) as tf.Tensor4D;
    if (bias) scores = tf.add(scores, bias);
    const context = tf.matMul(dropout(tf.softmax(scores)), values);
    const merged = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [B, Lq, w.d]);
    return dense(merged, w.Wo, w.bo) as tf.Tensor3D;
  });
}

/** A padding mask [B, L] (1 = a real token) as a bias [B, 1, 1, L] on the scores. */
export function keyPaddingBias(mask: tf.Tensor2D): tf.Tensor4D {
  const [B, L] = mask.shape;
  return tf.reshape(tf.mul(tf.sub(1, mask), MASKED_KEY_BIAS), [B, 1, 1, L]);
}

/** The decoder's causal mask for L positions as a bias [1, 1, L, L]: position i sees j ≤ i. */
export function causalBias(L: number): tf.Tensor4D {
  const bias = new Float32Array(L * L);
  for (let i = 0; i < L; i++) for (let j = i + 1; j < L; j++) bias[i * L + j] = MASKED_KEY_BIAS;
  return tf.tensor4d(bias, [1, 1, L, L]);
}

// ---- ONNX ------------------------------------------------------------------

/**
 * x [B, L, d] projected and split into heads [B, h, L, d/h]. With `split`, x is the same positions as rows [B·L, d]
 * and `split` the shape [B, L, h, d/h] ({@link headSplitOnnx}) to split them into: a 2-D projection is one Gemm with
 * its bias, where a 3-D one is a MatMul and an Add over its whole output.
 */
export function projectHeadsOnnx(
  g: GraphBuilder,
  w: MultiHeadAttentionWeights,
  which: Projection,
  x: string,
  split?: string,
): string {
  const dims = split ?? g.constInt64([0, 0, w.heads, w.d / w.heads]);
  return g.op('Transpose', [g.op('Reshape', [projectOnnx(g, w, which, x), dims])], { perm: [0, 2, 1, 3] });
}

/** The shape [B, L, h, d/h] that splits rows [B·L, d] into heads, from `positions` [B, L] (a mask of that shape). */
export function headSplitOnnx(g: GraphBuilder, heads: number, headSize: number, positions: string): string {
  return g.op('Concat', [g.op('Shape', [positions]), g.constInt64([heads, headSize])], { axis: 0 });
}

/**
 * x [..., d] projected by `which`: x W + b, and for the queries (x Wq + bq) / √(d/h), the scores' scale folded into
 * the query weights. Why: with the scale as a Mul after q kᵀ, onnxruntime fuses it into the MatMul's alpha, and an
 * alpha other than 1 keeps MLAS off its kernels for one query row (a decoder step's q kᵀ per row and head), which
 * measured 1.66-1.74× faster on the `small` step's [64·4] × [1 × 64]·[64 × 24] scores (docs/decoding-speed.md).
 */
function projectOnnx(g: GraphBuilder, w: MultiHeadAttentionWeights, which: Projection, x: string): string {
  const [W, b] = projectionWeights(w, which);
  if (which !== 'q') return denseOnnx(g, x, `${w.name}/W${which}`, W, `${w.name}/b${which}`, b);
  const scale = Math.fround(1 / Math.sqrt(w.d / w.heads));
  return denseOnnx(g, x, `${w.name}/Wq_scaled`, W, `${w.name}/bq_scaled`, b, scale);
}

/**
 * Each head's softmax(q kᵀ + bias) v: queries q [..., h, Lq, d/h], already scaled by 1/√(d/h) ({@link projectOnnx}),
 * over keys and values [..., h, Lk, d/h], `bias` broadcasting to [..., h, Lq, Lk] or null; returns [..., h, Lq, d/h],
 * the heads not yet merged.
 */
function headContextsOnnx(
  g: GraphBuilder,
  w: MultiHeadAttentionWeights,
  q: string,
  keys: string,
  values: string,
  bias: string | null,
): string {
  const kT = g.op('Transpose', [keys], { perm: [0, 1, 3, 2] });
  let scores = g.op('MatMul', [q, kT]);
  if (bias) scores = g.op('Add', [scores, bias]);
  return g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), values]);
}

/**
 * {@link attendHeads} as ONNX nodes; `bias` names a value broadcasting to [B, h, Lq, Lk], or null. With `split`
 * ({@link projectHeadsOnnx}), x and the result are rows [B·Lq, d].
 */
export function attendHeadsOnnx(
  g: GraphBuilder,
  w: MultiHeadAttentionWeights,
  x: string,
  keys: string,
  values: string,
  bias: string | null,
  split?: string,
): string {
  const context = headContextsOnnx(g, w, projectHeadsOnnx(g, w, 'q', x, split), keys, values, bias);
  const dims = g.constInt64(split ? [-1, w.d] : [0, 0, w.d]);
  const merged = g.op('Reshape', [g.op('Transpose', [context], { perm: [0, 2, 1, 3] }), dims]);
  return denseOnnx(g, merged, `${w.name}/Wo`, w.Wo, `${w.name}/bo`, w.bo);
}

/** A padding mask [B, L] as a bias [B, 1, 1, L]. */
export function keyPaddingBiasOnnx(g: GraphBuilder, mask: string): string {
  const bias = g.op('Mul', [g.op('Sub', [g.constFloat(1), mask]), g.constFloat(MASKED_KEY_BIAS)]);
  return g.unsqueeze(bias, [1, 2]);
}

// ---- ONNX, one query position (a decoder step) -------------------------------

/**
 * A decoder step's rows x [rows, d] projected by `which` and split into heads [rows, h, 1, d/h]. Kept in two
 * dimensions, the projection is a plain MatMul + Add that onnxruntime fuses into one Gemm, and with one position
 * the split into heads is a Reshape, no Transpose.
 */
export function projectStepHeadsOnnx(
  g: GraphBuilder,
  w: MultiHeadAttentionWeights,
  which: Projection,
  x: string,
): string {
  return stepHeads(g, w, projectOnnx(g, w, which, x));
}

/**
 * {@link attendHeadsOnnx} for one query position: queries q [rows, h, 1, d/h] (already projected and scaled, by
 * {@link projectStepHeadsOnnx}) over keys and values [rows, h, L, d/h]; returns [rows, d] after the output
 * projection. With one position the heads' outputs are merged by a Reshape: [rows, h, 1, d/h] and [rows, 1, h, d/h]
 * have the same layout.
 */
export function attendStepOnnx(
  g: GraphBuilder,
  w: MultiHeadAttentionWeights,
  q: string,
  keys: string,
  values: string,
  bias: string | null,
): string {
  return mergeStepHeadsOnnx(g, w, headContextsOnnx(g, w, q, keys, values, bias));
}

/**
 * {@link attendStepOnnx} over cached keys and values [rows, h, capacity, d/h] of which the positions that
 * `pastBias` [capacity] sets to -1e9 are unfilled, plus the current position's own key and value [rows, h, 1, d/h]
 * (the card's append caches, core/runtime/append-cache.ts). The new position's score is a row-wise product and its
 * context a scaled copy, so nothing here concatenates a cache.
 */
export function attendStepAppendOnnx(
  g: GraphBuilder,
  w: MultiHeadAttentionWeights,
  q: string,
  past: { keys: string; values: string; bias: string },
  newK: string,
  newV: string,
): string {
  const kT = g.op('Transpose', [past.keys], { perm: [0, 1, 3, 2] });
  const pastScores = g.op('Add', [g.op('MatMul', [q, kT]), past.bias]);
  const newScore = g.reduce('ReduceSum', g.op('Mul', [q, newK]), [3], true);
  const p = g.op('Softmax', [g.op('Concat', [pastScores, newScore], { axis: 3 })], { axis: -1 });
  const pPast = g.slice(p, [0], [-1], [3]);
  const pNew = g.slice(p, [-1], [Number.MAX_SAFE_INTEGER], [3]);
  const context = g.op('Add', [g.op('MatMul', [pPast, past.values]), g.op('Mul', [pNew, newV])]);
  return mergeStepHeadsOnnx(g, w, context);
}

/**
 * {@link attendStepOnnx} over keys and values with one row per source, [sources, h, L, d/h], for a step whose rows
 * x [rows, d] are `rows / sources` consecutive rows per source (beam search's beams side by side; one row each in
 * greedy search). Each source's queries go through its keys as one [g × d/h]·[d/h × L] product per head instead of g
 * products of one row each, and the keys are not copied once per beam: at beam 5 the step's cross-attention is about
 * a fifth of the matrix products. `bias` broadcasts to [sources, h, g, L].
 */
export function attendGroupedStepOnnx(
  g: GraphBuilder,
  w: MultiHeadAttentionWeights,
  x: string,
  keys: string,
  values: string,
  bias: string | null,
): string {
  const sources = g.slice(g.op('Shape', [keys]), [0], [1], [0]);
  const perSource = g.op('Concat', [sources, g.constInt64([-1, w.heads, w.d / w.heads])], { axis: 0 });
  const q = g.op('Transpose', [g.op('Reshape', [projectOnnx(g, w, 'q', x), perSource])], { perm: [0, 2, 1, 3] });
  const context = headContextsOnnx(g, w, q, keys, values, bias);
  const merged = g.op('Reshape', [g.op('Transpose', [context], { perm: [0, 2, 1, 3] }), g.constInt64([-1, w.d])]);
  return denseOnnx(g, merged, `${w.name}/Wo`, w.Wo, `${w.name}/bo`, w.bo);
}

/** One position's heads [rows, h, 1, d/h] merged by a Reshape to [rows, d], then the output projection. */
function mergeStepHeadsOnnx(g: GraphBuilder, w: MultiHeadAttentionWeights, context: string): string {
  const merged = g.op('Reshape', [context, g.constInt64([0, w.d])]);
  return denseOnnx(g, merged, `${w.name}/Wo`, w.Wo, `${w.name}/bo`, w.bo);
}

/** x W + b, with W and b stored multiplied by `scale` when one is given. */
function denseOnnx(
  g: GraphBuilder,
  x: string,
  wName: string,
  W: tf.Tensor,
  bName: string,
  b: tf.Tensor,
  scale?: number,
): string {
  const value = (t: tf.Tensor): TensorValue => {
    const v = tensorValue(t);
    return scale === undefined ? v : { ...v, data: (v.data as Float32Array).map((e) => e * scale) };
  };
  return g.op('Add', [g.op('MatMul', [x, g.initializer(wName, value(W))]), g.initializer(bName, value(b))]);
}

function stepHeads(g: GraphBuilder, w: MultiHeadAttentionWeights, y: string): string {
  return g.op('Reshape', [y, g.constInt64([0, w.heads, 1, w.d / w.heads])]);
}
