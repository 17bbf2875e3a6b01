import '@tensorflow/tfjs';
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { addBiasOver, BIAS_ADD_KERNEL } from '../models/layers/bias-add.ts';
import { initBackend } from '../train/backend/select.ts';
import { uniformTensors } from './helpers/random-tensors.ts';

const rand = uniformTensors(31, 'bias-add');

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
});

/** A copy with data of its own (tf.clone shares data on wasm). */
const own = (t: tf.Tensor) => tf.tensor(t.dataSync(), t.shape, t.dtype);

test('FrostBiasAdd equals tf.add, and writes over x only when x is given up and held alone', () => {
  // 13 columns: the SIMD body and its one-lane tail both run.
  for (const [N, C] of [
    [5, 13],
    [64, 8],
    [1, 3],
  ])
    tf.tidy(() => {
      const x = rand([N, C], 4);
      const bias = rand([C]);
      const want = tf.add(x, bias).dataSync();
      const run = (input: tf.Tensor, attrs: tf.NamedAttrMap) =>
        (tf.engine().runKernel(BIAS_ADD_KERNEL, { x: input, bias }, attrs) as unknown as tf.Tensor[])[0]!;

      const copied = run(x, {});
      assert.notEqual(copied.dataId, x.dataId);
      assert.deepEqual(copied.dataSync(), want);

      const alone = own(x);
      const over = run(alone, { inPlace: true });
      assert.equal(over.dataId, alone.dataId, `[${N}, ${C}]: not written over x`);
      assert.deepEqual(over.dataSync(), want);

      const shared = own(x);
      const other = tf.clone(shared);
      const beside = run(shared, { inPlace: true });
      assert.notEqual(beside.dataId, shared.dataId, 'x another tensor shares was overwritten');
      assert.deepEqual(other.dataSync(), x.dataSync());
      assert.deepEqual(beside.dataSync(), want);
    });
});

test("addBiasOver's gradients are tf.add's: dy for x, its column sums for b", () => {
  tf.tidy(() => {
    const f = rand([7, 5]);
    const W = rand([5, 11]);
    const b = rand([11]);
    const weights = rand([7, 11]);
    const loss = (op: (z: tf.Tensor2D, b: tf.Tensor) => tf.Tensor) => (f: tf.Tensor, W: tf.Tensor, b: tf.Tensor) =>
      tf.sum(tf.mul(tf.square(op(tf.matMul(f as tf.Tensor2D, W as tf.Tensor2D), b)), weights));
    const ours = tf.grads(loss(addBiasOver))([f, W, b]);
    const theirs = tf.grads(loss((z, bias) => tf.add(z, bias)))([f, W, b]);
    for (const [i, g] of ours.entries()) {
      const [a, w] = [g.dataSync(), theirs[i]!.dataSync()];
      for (let j = 0; j < a.length; j++) assert.ok(Math.abs(a[j] - w[j]) <= 1e-5 * (1 + Math.abs(w[j])), `input ${i}`);
    }
  });
});
