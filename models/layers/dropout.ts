import * as tf from '@tensorflow/tfjs-core';
import { unitAt } from '../../core/random.ts';
import { fusedMode, runFused } from './fused.ts';

/**
 * Inverted dropout with a counter-based mask: element i (row-major) is kept when
 * unitAt(seed, i) ≥ rate (core/random.ts), and kept elements are scaled by 1 / (1 − rate).
 *
 * The same seed gives the same mask on every backend, since the mask is a pure function of
 * (seed, i). tf.dropout instead draws the mask from a JS Alea generator, one element at a time
 * (≈ 50 ns an element with its tensor upload), then takes four more kernels to scale it; on a
 * `small` training step that was ≈ 1.5M draws. The kernel contract:
 *
 *   FrostDropout  inputs x; attrs seed (uint32), rate ∈ [0, 1)
 *                 outputs y = x ⊙ mask, mask (0 or 1 / (1 − rate), x's shape)
 *
 * frost registers it for wasm (train/backend/kernels/dropout.ts); elsewhere the mask is made in JS.
 * In the 'unfused' mode (fused.ts) this is tf.dropout, as before.
 */
export const DROPOUT_KERNEL = 'FrostDropout';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

export function seededDropout<T extends tf.Tensor>(x: T, rate: number, seed: number): T {
  if (!(rate >= 0 && rate < 1)) throw new RangeError(`dropout 'rate' must be in [0, 1), got ${rate}`);
  if (rate === 0) return x;
  if (fusedMode() === 'unfused') return tf.dropout(x, rate, undefined, seed) as T;
  const attrs = { seed: seed >>> 0, rate }; // eslint-disable-line no-bitwise -- the kernel takes the seed as a uint32
  // The mask is a function of the seed: the gradient makes it again (dy ⊙ mask is the same kernel run on dy) rather
  // than keep a float32 copy of every dropout's input shape through the forward pass.
  const masked = (t: tf.Tensor) => {
    const [y, mask] = runFused(DROPOUT_KERNEL, { x: t }, () => dropoutOps(t, attrs.seed, rate), attrs);
    mask!.dispose();
    return y!;
  };
  const op = tf.customGrad(((input: tf.Tensor) => ({
    value: masked(input),
    gradFunc: masked,
  })) as unknown as CustomGradFn);
  return op(x) as T;
}

/** The scale of kept elements, as the kernels use it (float32). */
export function dropoutScale(rate: number): number {
  return Math.fround(1 / (1 - rate));
}

/** FrostDropout with the mask made in JS. */
export function dropoutOps(x: tf.Tensor, seed: number, rate: number): tf.Tensor[] {
  const mask = new Float32Array(x.size);
  const scale = dropoutScale(rate);
  for (let i = 0; i < mask.length; i++) mask[i] = unitAt(seed, i) >= rate ? scale : 0;
  const m = tf.tensor(mask, x.shape, 'float32');
  return [tf.mul(x, m), m];
}
