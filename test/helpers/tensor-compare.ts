import assert from 'node:assert/strict';
import type * as tf from '@tensorflow/tfjs-core';
import { setFusedMode, type FusedMode } from '../../models/layers/fused.ts';

/** max |a − b| / max(1, max |b|), after checking the shapes agree and nothing is NaN or infinite. */
export function scaledDiff(a: tf.Tensor, b: tf.Tensor): number {
  assert.deepEqual(a.shape, b.shape);
  const x = a.dataSync();
  const y = b.dataSync();
  let scale = 1;
  for (let i = 0; i < y.length; i++) scale = Math.max(scale, Math.abs(y[i]));
  let worst = 0;
  for (let i = 0; i < y.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
  assert.ok(Number.isFinite(worst), 'non-finite values');
  return worst / scale;
}

/** fn() with the recurrent steps in `mode` (models/layers/fused.ts), the previous mode restored after. */
export function withMode<T>(mode: FusedMode, fn: () => T): T {
  const previous = setFusedMode(mode);
  try {
    return fn();
  } finally {
    setFusedMode(previous);
  }
}
