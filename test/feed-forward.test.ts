import '@tensorflow/tfjs';
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { feedForward, type FeedForwardActivation, type FeedForwardWeights } from '../models/layers/feed-forward.ts';
import { initBackend } from '../train/backend/select.ts';
import { uniformTensors } from './helpers/random-tensors.ts';

const rand = uniformTensors(41, 'feed-forward');

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
});

/** The block as plain tfjs ops: tf.add for the biases, tf.relu (or the erf GELU) for the activation. */
function plainBlock(w: FeedForwardWeights, x: tf.Tensor): tf.Tensor {
  const [rows, d] = [x.size / x.shape[x.shape.length - 1], x.shape[x.shape.length - 1]];
  const pre = tf.add(tf.matMul(tf.reshape(x, [rows, d]) as tf.Tensor2D, w.W1 as tf.Tensor2D), w.b1);
  const h =
    w.activation === 'gelu' ? tf.mul(tf.mul(pre, 0.5), tf.add(tf.erf(tf.mul(pre, Math.SQRT1_2)), 1)) : tf.relu(pre);
  return tf.reshape(tf.add(tf.matMul(h as tf.Tensor2D, w.W2 as tf.Tensor2D), w.b2), x.shape);
}

for (const activation of ['relu', 'gelu'] as FeedForwardActivation[])
  test(`feed-forward (${activation}): output and every gradient equal the plain ops'`, () => {
    tf.tidy(() => {
      const [d, inner] = [6, 10];
      const w = {
        name: 'ff',
        activation,
        W1: rand([d, inner]),
        b1: rand([inner]),
        W2: rand([inner, d]),
        b2: rand([d]),
      } as unknown as FeedForwardWeights;
      const x = rand([3, 4, d]);
      const weights = rand([3, 4, d]);
      type Block = (w: FeedForwardWeights, x: tf.Tensor) => tf.Tensor;
      const lossOf =
        (block: Block) =>
        (...[x2, W1, b1, W2, b2]: tf.Tensor[]) =>
          tf.sum(tf.mul(tf.square(block({ ...w, W1, b1, W2, b2 } as unknown as FeedForwardWeights, x2!)), weights));
      const ours: Block = (v, h) => feedForward(v, h, (a) => a);
      const inputs = [x, w.W1, w.b1, w.W2, w.b2];
      const [mine, plain] = [ours, plainBlock].map((block) => tf.grads(lossOf(block))(inputs));
      const largest = (a: tf.Tensor, b: tf.Tensor) => Math.max(...tf.sub(a, b).abs().dataSync());
      assert.ok(largest(ours(w, x), plainBlock(w, x)) < 1e-5, 'forward');
      for (const [i, g] of mine!.entries()) {
        const diff = largest(g, plain![i]!);
        assert.ok(diff <= 1e-5, `gradient of input ${i}: ${diff}`);
      }
    });
  });
