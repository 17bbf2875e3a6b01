import * as tf from '@tensorflow/tfjs-core';
import type { AttentionWeights } from './attention.ts';
import type { StepMatMul } from './shared-matmul.ts';

/**
 * Additive attention (attention.ts's weights and equations) over every position of an image's
 * grid, which has no padding to mask, with s · Wa computed by `sWa`. Returns the context
 * c [B, A] and the weights α [B, L]: show-attend-tell's doubly stochastic penalty reads α.
 */
export function attendGrid(
  w: AttentionWeights,
  s: tf.Tensor2D,
  annotations: tf.Tensor3D,
  keys: tf.Tensor3D,
  sWa: StepMatMul,
): { context: tf.Tensor2D; alpha: tf.Tensor2D } {
  const [B, L, att] = keys.shape;
  // α = softmax_i(v · tanh(keys_i + s Wa + ba)); c = Σ_i α_i a_i
  const q = tf.add(sWa(s), w.ba);
  const energy = tf.tanh(tf.add(keys, tf.reshape(q, [B, 1, att])));
  const alpha = tf.softmax(tf.reshape(tf.matMul(tf.reshape(energy, [B * L, att]), w.v), [B, L])) as tf.Tensor2D;
  return { context: tf.reshape(tf.matMul(tf.reshape(alpha, [B, 1, L]), annotations), [B, -1]), alpha };
}
