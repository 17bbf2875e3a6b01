import * as tf from '@tensorflow/tfjs-core';
import { streamKey, uniformMatrix } from '../../core/random.ts';

/**
 * A source of random test tensors: each call draws a fresh core/random stream, `prefix-0`, `prefix-1`, … under
 * `seed`, so a file's inputs are the same on every run and every machine.
 * @returns a function giving a tensor of `shape`, uniform in [−scale, scale)
 */
export function uniformTensors(seed: number, prefix: string): (shape: number[], scale?: number) => tf.Tensor {
  let draws = 0;
  return (shape, scale = 1) => {
    const n = shape.reduce((p, x) => p * x, 1);
    return tf.tensor(uniformMatrix(streamKey(seed, `${prefix}-${draws++}`), 1, n, -scale, scale), shape);
  };
}
