import * as tf from '@tensorflow/tfjs-core';
import type { ParamStore } from '../params.ts';
import type { StepMatMul } from './shared-matmul.ts';

/**
 * Bahdanau's additive attention: score_j = v · tanh(keys_j + s Wa + ba), keys = annotations Ua
 * computed once per source. Padded positions get -1e9 before the softmax.
 */
export interface AttentionWeights {
  /** [A, att] */ Ua: tf.Variable;
  /** [H, att] */ Wa: tf.Variable;
  /** [att] */ ba: tf.Variable;
  /** [att, 1] */ v: tf.Variable;
}

export const MASKED_SCORE = 1e9;

export function createAttention(params: ParamStore, prefix: string, annotation: number, query: number, size: number): AttentionWeights {
  return {
    Ua: params.variable(`${prefix}/Ua`, [annotation, size], { kind: 'glorot-uniform' }),
    Wa: params.variable(`${prefix}/Wa`, [query, size], { kind: 'glorot-uniform' }),
    ba: params.variable(`${prefix}/ba`, [size], { kind: 'zeros' }),
    v: params.variable(`${prefix}/v`, [size, 1], { kind: 'glorot-uniform' }),
  };
}

/** keys [B, S, att] from annotations [B, S, A]. */
export function attentionKeys(w: AttentionWeights, annotations: tf.Tensor3D): tf.Tensor3D {
  const [B, S, A] = annotations.shape;
  return tf.reshape(tf.matMul(tf.reshape(annotations, [B * S, A]), w.Ua), [B, S, -1]);
}

/** The context vector c [B, A] for queries s [B, H]. */
export function attend(
  w: AttentionWeights,
  s: tf.Tensor2D,
  annotations: tf.Tensor3D,
  keys: tf.Tensor3D,
  srcMask: tf.Tensor2D,
): tf.Tensor2D {
  return attendWith(w, s, annotations, keys, srcMask, (x) => tf.matMul(x, w.Wa));
}

/** attend with s · Wa computed by `sWa` (a decoder loop passes sharedWeightMatMul(w.Wa)). */
export function attendWith(
  w: AttentionWeights,
  s: tf.Tensor2D,
  annotations: tf.Tensor3D,
  keys: tf.Tensor3D,
  srcMask: tf.Tensor2D,
  sWa: StepMatMul,
): tf.Tensor2D {
  const [B, S, att] = keys.shape;
  const q = tf.add(sWa(s), w.ba);
  const energy = tf.tanh(tf.add(keys, tf.reshape(q, [B, 1, att])));
  const scores = tf.reshape(tf.matMul(tf.reshape(energy, [B * S, att]), w.v), [B, S]);
  const masked = tf.add(scores, tf.mul(tf.sub(srcMask, 1), MASKED_SCORE));
  const alpha = tf.softmax(masked, 1);
  return tf.reshape(tf.matMul(tf.reshape(alpha, [B, 1, S]), annotations), [B, -1]);
}
