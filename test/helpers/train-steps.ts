import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import type { Seq2SeqModel } from '../../models/index.ts';
import { makeBatch, planBatches, type EncodedPair } from '../../train/data/batches.ts';
import { Adam } from '../../train/optim/adam.ts';

/**
 * Trains `steps` Adam steps of the mean token loss on batches of at most `maxSentences` pairs, cycling over the
 * first `batches` of the epoch's plan (all by default); returns the losses, checking that no tensor leaks.
 */
export function trainSteps(
  model: Seq2SeqModel,
  pairs: EncodedPair[],
  steps: number,
  opts: { learningRate: number; maxSentences: number; batches?: number },
): number[] {
  const optimizer = new Adam(model.params.learnable, { learningRate: opts.learningRate });
  const plan = planBatches(pairs, { seed: 1, maxSentences: opts.maxSentences }, 0);
  const cycle = Math.min(plan.length, opts.batches ?? plan.length);
  const losses: number[] = [];
  const before = tf.memory().numTensors;
  for (let i = 0; i < steps; i++) {
    const batch = makeBatch(pairs, plan[i % cycle]);
    losses.push(optimizer.minimize(() => tf.div(model.lossSum(batch, true), batch.tokens) as tf.Scalar).loss);
  }
  assert.equal(tf.memory().numTensors, before, 'a training step leaked tensors');
  optimizer.dispose();
  return losses;
}
