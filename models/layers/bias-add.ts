import * as tf from '@tensorflow/tfjs-core';
import { runFused } from './fused.ts';

/**
 * x + b for scores x [N, C] and a bias b [C], where the caller never reads x again: an output layer's x·W, made in
 * its own scope. The sum may be written over x, so the [N, |V|] scores are one buffer where tf.add makes a second
 * beside the first; and nothing is saved for the gradient (tf.add keeps both addends, for their shapes), which is
 * dy for x and dy's column sums for b.
 *
 * The kernel contract (train/backend/kernels/bias-add.ts registers it for wasm):
 *   FrostBiasAdd  inputs x [N, C], bias [C]; attrs inPlace
 *                 outputs y [N, C] = x + bias in every row, over x's own data when inPlace and no other tensor
 *                 shares it.
 */
export const BIAS_ADD_KERNEL = 'FrostBiasAdd';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

const biasAdd = tf.customGrad(((x: tf.Tensor, b: tf.Tensor) => {
  const [y] = runFused(BIAS_ADD_KERNEL, { x, bias: b }, () => [tf.add(x, b)], { inPlace: true });
  return {
    value: y!,
    gradFunc: (dy: tf.Tensor) => [dy, tf.sum(dy, 0)],
  };
}) as unknown as CustomGradFn);

export function addBiasOver(x: tf.Tensor2D, b: tf.Tensor): tf.Tensor2D {
  return biasAdd(x, b) as tf.Tensor2D;
}
