/**
 * Target packing (models/packed-steps.ts) and the decoders that use it: the sort, the per-step
 * counts and the packed order on small hand-made masks, then the property that makes skipping
 * padding safe: a padded batch's loss and every gradient equal the sums over its sentences (or
 * captions) run one at a time, with no padding at all: rnn-attn on the wasm kernels and on the
 * tfjs ops, show-tell, and show-attend-tell with its attention penalty.
 */
import '@tensorflow/tfjs';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { buildModel, resolveArchConfig, type ImageBatch, type ModelBatch, type Seq2SeqModel } from '../models/index.ts';
import { packSteps, packTimeMajor, permuteRows } from '../models/packed-steps.ts';
import { initBackend } from '../train/backend/select.ts';
import { makeBatch, planBatches } from '../train/data/batches.ts';
import { syntheticImageBatch } from './helpers/caption-batches.ts';
import { scaledDiff, withMode } from './helpers/tensor-compare.ts';
import { toyWordPairs } from './helpers/toy-pairs.ts';

await initBackend({ prefer: 'wasm', quiet: true });

test('packSteps sorts rows longest first (stable) and counts the rows running at each step', () => {
  // lengths 2, 4, 1, 4: a hole at row 1 step 2 still counts to its last unmasked position
  const mask = Float32Array.from([1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1]);
  const steps = packSteps(mask, 4, 4);
  assert.deepEqual([...steps.order], [1, 3, 0, 2]);
  assert.deepEqual(steps.counts, [4, 3, 2, 2]);
  assert.equal(steps.size, 11);
  const ids = Int32Array.from({ length: 16 }, (_, i) => i); // row b, step t holds 4b + t
  assert.deepEqual([...packTimeMajor(ids, steps, 4)], [4, 12, 0, 8, 5, 13, 1, 6, 14, 7, 15]);
  assert.deepEqual([...packTimeMajor(mask, steps, 4)], [1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1]);
  assert.deepEqual([...permuteRows(Int32Array.from([10, 11, 12, 13]), steps.order, 1)], [11, 13, 10, 12]);
  assert.deepEqual(
    [...permuteRows(Float32Array.from([0, 1, 2, 3, 4, 5, 6, 7]), steps.order, 2)],
    [2, 3, 6, 7, 0, 1, 4, 5],
  );
});

test('packSteps: an all-padding row takes no step; wrong sizes are refused', () => {
  const steps = packSteps(Float32Array.from([0, 0, 1, 0]), 2, 2);
  assert.deepEqual([...steps.order], [1, 0]);
  assert.deepEqual(steps.counts, [1]);
  assert.throws(() => packSteps(new Float32Array(5), 2, 2), /5 values for a \[2, 2\] batch/);
  assert.throws(() => permuteRows(new Int32Array(5), steps.order, 2), /5 values are not 2 rows of 2/);
  assert.throws(() => packTimeMajor(new Int32Array(6), steps, 2), /6 values are not 2 rows of 2/);
});

/** The loss and every gradient of `whole` against the sums over `parts`, and no tensor left behind. */
function assertSumOfParts(
  model: Seq2SeqModel,
  whole: ModelBatch,
  parts: ModelBatch[],
  training: boolean,
  label: string,
): void {
  const vars = [...model.params.learnable.values()];
  const before = tf.memory().numTensors;
  const all = tf.variableGrads(() => model.lossSum(whole, training), vars);
  const alone = parts.map((b) => tf.variableGrads(() => model.lossSum(b, training), vars));
  const sumLoss = tf.addN(alone.map((g) => g.value));
  assert.ok(
    scaledDiff(all.value, sumLoss) < 1e-5,
    `${label}: loss ${all.value.dataSync()[0]} vs ${sumLoss.dataSync()[0]}`,
  );
  for (const name of Object.keys(all.grads)) {
    const sum = tf.addN(alone.map((g) => g.grads[name]));
    assert.ok(scaledDiff(all.grads[name], sum) < 1e-4, `${label}: gradient of ${name}`);
    sum.dispose();
  }
  tf.dispose([
    all.value,
    sumLoss,
    ...Object.values(all.grads),
    ...alone.flatMap((g) => [g.value, ...Object.values(g.grads)]),
  ]);
  assert.equal(tf.memory().numTensors, before, `${label}: tensors left behind`);
}

test('rnn-attn: a padded batch gives the loss and gradients of its sentences run one at a time', () => {
  const { pairs, sizes } = toyWordPairs({ seed: 11, train: 60 });
  // Unbucketed, so target (and source) lengths differ widely within the batch.
  const indices = planBatches(pairs, { seed: 2, maxSentences: 9, bucket: false }, 0)[0];
  const batch = makeBatch(pairs, indices);
  const lengths = [...indices].map((i) => pairs[i].tgt.length);
  assert.ok(Math.max(...lengths) - Math.min(...lengths) >= 3, `target lengths ${lengths} too alike to test padding`);
  // The tiny preset has no dropout, so every call computes the same function.
  const model = buildModel('rnn-attn', resolveArchConfig('rnn-attn', 'tiny'), sizes, { name: 'learned' }, 7);
  const alone = [...indices].map((i) => makeBatch(pairs, [i]));
  for (const mode of ['auto', 'unfused'] as const)
    withMode(mode, () => assertSumOfParts(model, batch, alone, true, `rnn-attn ${mode}`));
  model.params.dispose();
});

/** Caption b of `batch` alone: its image and its own length, no padding. */
function captionAlone(batch: ImageBatch, b: number): ImageBatch {
  const { T } = batch;
  let len = T;
  while (len > 0 && batch.tgtMask[b * T + len - 1] === 0) len--;
  const per = batch.images.length / batch.imageCount;
  const row = batch.imageRows[b];
  const cut = <A extends Int32Array | Float32Array>(x: A) => x.slice(b * T, b * T + len) as A;
  return {
    B: 1,
    T: len,
    tgtIn: cut(batch.tgtIn),
    tgtOut: cut(batch.tgtOut),
    tgtMask: cut(batch.tgtMask),
    tokens: len,
    images: batch.images.slice(row * per, (row + 1) * per),
    imageShape: batch.imageShape,
    imageCount: 1,
    imageRows: Int32Array.of(0),
  };
}

test('show-tell and show-attend-tell: a padded caption batch gives the loss and gradients of its captions run one at a time', () => {
  const batch = syntheticImageBatch(4, { images: 3, captionsPerImage: 3, size: 16, vocab: 30, maxLen: 7 });
  const lengths = Array.from({ length: batch.B }, (_, b) =>
    batch.tgtMask.subarray(b * batch.T, (b + 1) * batch.T).reduce((a, m) => a + m, 0),
  );
  assert.ok(Math.max(...lengths) - Math.min(...lengths) >= 3, `caption lengths ${lengths} too alike to test padding`);
  const parts = lengths.map((_, b) => captionAlone(batch, b));
  const sizes = { tgtVocab: 30, image: { kind: 'pixels', size: 16 } as const };
  for (const arch of ['show-tell', 'show-attend-tell']) {
    // Not training: the same function for every call (no dropout), and the CNN's statistics fixed.
    const config = {
      ...resolveArchConfig(arch, 'tiny'),
      ...(arch === 'show-attend-tell' ? { attentionPenalty: 0.5 } : {}),
    };
    const model = buildModel(arch, config, sizes, { name: 'learned' }, 3);
    assertSumOfParts(model, batch, parts, false, arch);
    model.params.dispose();
  }
});
