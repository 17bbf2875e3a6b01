import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import type { ParamStore } from '../params.ts';
import { MASKED_SCORE } from './attention.ts';

const HALF = Math.SQRT1_2;

/**
 * ConvS2S's multi-step attention, one per decoder layer (Gehring et al. 2017, §3.3), as fairseq's
 * fconv computes it. For the layer's GLU output h_i [C] and the target embedding g_i [e]:
 *   d_i = (h_i W_d + b_d + g_i) · √0.5
 *   a_ij = softmax_j(d_i · z_j)          (z = encoder keys; padded j get −1e9)
 *   c_i = Σ_j a_ij v_j                    (v = (z + source embedding)·√0.5, pre-scaled by √|s|)
 *   out_i = (c_i W_o + b_o + h_i) · √0.5
 * The √|s| factor (fairseq's scaling by the source length, which keeps the context's variance
 * independent of length) is folded into the values once in the encoder.
 */
export interface Convs2sAttention {
  /** [C, e] */ inW: tf.Variable;
  /** [e] */ inB: tf.Variable;
  /** [e, C] */ outW: tf.Variable;
  /** [C] */ outB: tf.Variable;
}

export function createConvs2sAttention(
  params: ParamStore,
  prefix: string,
  channels: number,
  embedding: number,
): Convs2sAttention {
  // fairseq's Linear init N(0, 1/in) (no dropout follows these), as a uniform law of that variance.
  const limit = (fanIn: number) => ({ kind: 'uniform' as const, limit: Math.sqrt(3 / fanIn) });
  return {
    inW: params.variable(`${prefix}/in/W`, [channels, embedding], limit(channels)),
    inB: params.variable(`${prefix}/in/b`, [embedding], { kind: 'zeros' }),
    outW: params.variable(`${prefix}/out/W`, [embedding, channels], limit(embedding)),
    outB: params.variable(`${prefix}/out/b`, [channels], { kind: 'zeros' }),
  };
}

/**
 * h [B, T, C], g [B, T, e], keysT [B, e, S], values [B, S, e], srcMask [B, S] → [B, T, C].
 * T = 1 is the incremental decoder's step.
 */
export function convs2sAttend(
  w: Convs2sAttention,
  h: tf.Tensor3D,
  g: tf.Tensor3D,
  keysT: tf.Tensor3D,
  values: tf.Tensor3D,
  srcMask: tf.Tensor2D,
): tf.Tensor3D {
  const [B, T, C] = h.shape;
  const e = g.shape[2];
  const proj = tf.reshape(tf.add(tf.matMul(tf.reshape(h, [B * T, C]), w.inW), w.inB), [B, T, e]);
  const d = tf.mul(tf.add(proj, g), HALF);
  const penalty = tf.expandDims(tf.mul(tf.sub(srcMask, 1), MASKED_SCORE), 1);
  const attn = tf.softmax(tf.add(tf.matMul(d, keysT), penalty));
  const ctx = tf.matMul(attn, values) as tf.Tensor3D;
  const out = tf.reshape(tf.add(tf.matMul(tf.reshape(ctx, [B * T, e]), w.outW), w.outB), [B, T, C]);
  return tf.mul(tf.add(out, h), HALF) as tf.Tensor3D;
}

/** ONNX of {@link convs2sAttend} for one step: h [N, C], g [N, e] and the memory by value name → [N, C]. */
export function convs2sAttendStepOnnx(
  gb: GraphBuilder,
  w: Convs2sAttention,
  prefix: string,
  h: string,
  g: string,
  memory: { keysT: string; values: string; penalty: string },
): string {
  const init = (name: string, t: tf.Tensor) => gb.initializer(`${prefix}/${name}`, tensorValue(t));
  const d = gb.op('Mul', [
    gb.op('Add', [gb.op('Gemm', [h, init('in/W', w.inW), init('in/b', w.inB)]), g]),
    gb.constFloat(HALF),
  ]);
  // [N, 1, e] · [N, e, S] → scores [N, 1, S]
  const scores = gb.op('Add', [gb.op('MatMul', [gb.unsqueeze(d, [1]), memory.keysT]), memory.penalty]);
  const attn = gb.op('Softmax', [scores], { axis: -1 });
  const ctx = gb.squeeze(gb.op('MatMul', [attn, memory.values]), [1]);
  const out = gb.op('Gemm', [ctx, init('out/W', w.outW), init('out/b', w.outB)]);
  return gb.op('Mul', [gb.op('Add', [out, h]), gb.constFloat(HALF)]);
}

/** ONNX: the additive mask −1e9·(1 − mask) as [N, 1, S], computed once per step for every layer. */
export function convs2sPenaltyOnnx(g: GraphBuilder, srcMask: string): string {
  return g.unsqueeze(g.op('Mul', [g.op('Sub', [srcMask, g.constFloat(1)]), g.constFloat(MASKED_SCORE)]), [1]);
}
