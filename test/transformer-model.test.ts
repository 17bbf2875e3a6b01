import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { ort } from '../core/runtime/ort-node.ts';
import type { TransformerModel } from '../models/archs/transformer.ts';
import { buildModel, headNames, resolveArchConfig, type ModelSizes, type Seq2SeqModel } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { makeBatch, planBatches, type EncodedPair } from '../train/data/batches.ts';
import { startOnnxChecker, type OnnxChecker } from './helpers/onnx-checker.ts';
import { assertOnnxParity } from './helpers/onnx-parity.ts';
import { toyJointPairs } from './helpers/toy-pairs.ts';
import { trainSteps as trainModelSteps } from './helpers/train-steps.ts';

const SEED = 5;
const BOS = 2;
const PAD = 0;
let pairs: EncodedPair[];
/** One vocabulary over both sides: the source, target and (tied/shared heads) output matrix are one. */
let joint: ModelSizes;
let separate: ModelSizes;
/** One Python checker for the file's models: a Python start per model cost more than the check. */
let checker: OnnxChecker;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  ({ pairs, joint, separate } = toyJointPairs({ seed: 1, train: 400, val: 10, test: 10 }));
  checker = await startOnnxChecker();
});

after(() => checker.close());

function samples(n: number) {
  return pairs.slice(0, n).map((p) => ({ src: Int32Array.from(p.src), tgt: Int32Array.from(p.tgt) }));
}

/** Trains `steps` Adam steps on batches of 32 sentences; returns the losses, checking that no tensor leaks. */
function trainSteps(model: Seq2SeqModel, steps: number): number[] {
  return trainModelSteps(model, pairs, steps, { learningRate: 2e-3, maxSentences: 32 });
}

async function assertParity(model: Seq2SeqModel): Promise<void> {
  await assertOnnxParity(checker, model, samples(5), BOS, PAD);
}

describe('transformer: every head trains and exports with parity (joint vocabulary)', () => {
  for (const head of headNames()) {
    test(`${head}: the loss falls over training steps and onnxruntime matches tfjs`, async () => {
      const model = buildModel('transformer', resolveArchConfig('transformer', 'tiny'), joint, { name: head }, SEED);
      try {
        const losses = trainSteps(model, 10);
        const first = (losses[0] + losses[1]) / 2;
        const last = (losses[8] + losses[9]) / 2;
        assert.ok(last < first, `loss did not fall: ${losses.map((l) => l.toFixed(3)).join(' ')}`);
        await assertParity(model);
      } finally {
        model.params.dispose();
      }
    });
  }
});

/** Teacher-forced inputs for `n` sentences: src [B, S], lengths, tgtIn = <s> y padded [B, T], each row's length. */
function forcedBatch(n: number) {
  const s = samples(n);
  const S = Math.max(...s.map((p) => p.src.length));
  const T = Math.max(...s.map((p) => p.tgt.length)) + 1;
  const src = new Int32Array(n * S).fill(PAD);
  const tgtIn = new Int32Array(n * T).fill(PAD);
  s.forEach((p, b) => {
    src.set(p.src, b * S);
    tgtIn[b * T] = BOS;
    tgtIn.set(p.tgt, b * T + 1);
  });
  return { s, S, T, src, tgtIn, lengths: Int32Array.from(s, (p) => p.src.length) };
}

describe('transformer: the cached decoder equals the uncached one', () => {
  const variants: [string, Record<string, unknown>, () => ModelSizes][] = [
    ['post-norm, sinusoidal, relu, joint vocabulary', { norm: 'post' }, () => joint],
    [
      'pre-norm, learned positions, gelu, separate vocabularies',
      { norm: 'pre', positions: 'learned', activation: 'gelu' },
      () => separate,
    ],
  ];
  for (const [name, set, sizes] of variants) {
    test(`${name}: tfjs steps and onnxruntime steps with the cache equal the teacher-forced decoder`, async () => {
      const config = resolveArchConfig('transformer', 'tiny', set);
      const model = buildModel('transformer', config, sizes(), { name: 'tied' }, SEED) as TransformerModel;
      try {
        trainSteps(model, 3); // away from the initial weights (LN gains 1, biases 0)
        const n = 4;
        const { s, S, T, src, tgtIn, lengths } = forcedBatch(n);
        const forced = tf.tidy(() =>
          model.forcedLogProbs(
            tf.tensor2d(src, [n, S], 'int32'),
            tf.tensor1d(lengths, 'int32'),
            tf.tensor2d(tgtIn, [n, T], 'int32'),
          ),
        );
        const V = forced.shape[2];
        const expected = (await forced.data()) as Float32Array;
        forced.dispose();

        const { encoder, decoder } = model.toOnnx();
        const enc = await ort.InferenceSession.create(encoder.toBytes());
        const dec = await ort.InferenceSession.create(decoder.toBytes());
        let feeds: Record<string, ort.Tensor> = await enc.run({
          src_ids: new ort.Tensor('int64', BigInt64Array.from(src, BigInt), [n, S]),
          src_lengths: new ort.Tensor('int64', BigInt64Array.from(lengths, BigInt), [n]),
        });
        assert.deepEqual(feeds.self_k_0.dims, [
          n,
          config.heads,
          0,
          (config.model as number) / (config.heads as number),
        ]);
        let tfState = tf.tidy(() =>
          model.encode({
            kind: 'tokens',
            ids: tf.tensor2d(src, [n, S], 'int32'),
            lengths: tf.tensor1d(lengths, 'int32'),
          }),
        );
        let worstOnnx = 0;
        let worstTfjs = 0;
        for (let t = 0; t < T; t++) {
          const prev = Int32Array.from({ length: n }, (_, b) => tgtIn[b * T + t]);
          const out = await dec.run({
            ...feeds,
            prev_token: new ort.Tensor('int64', BigInt64Array.from(prev, BigInt), [n]),
          });
          assert.equal(out.next_self_k_0.dims[2], t + 1);
          const step = tf.tidy(() => model.step(tf.tensor1d(prev, 'int32'), tfState));
          const stepped = (await step.logProbs.data()) as Float32Array;
          const onnx = out.log_probs.data as Float32Array;
          for (let b = 0; b < n; b++) {
            if (t > s[b].tgt.length) continue; // past </s>: padding the loss never reads
            for (let v = 0; v < V; v++) {
              const want = expected[(b * T + t) * V + v];
              worstOnnx = Math.max(worstOnnx, Math.abs(onnx[b * V + v] - want) / Math.max(1, Math.abs(want)));
              worstTfjs = Math.max(worstTfjs, Math.abs(stepped[b * V + v] - want) / Math.max(1, Math.abs(want)));
            }
          }
          const next: Record<string, ort.Tensor> = { ...feeds };
          for (const name of model.stateNames) next[name] = out[`next_${name}`];
          feeds = next;
          step.logProbs.dispose();
          for (const name of model.stateNames) tfState[name].dispose();
          tfState = { ...tfState, ...step.state };
        }
        tf.dispose(Object.values(tfState));
        await enc.release();
        await dec.release();
        assert.ok(worstOnnx <= 1e-4, `onnxruntime with the cache differs by ${worstOnnx}`);
        assert.ok(worstTfjs <= 1e-4, `tfjs with the cache differs by ${worstTfjs}`);
        await assertParity(model);
      } finally {
        model.params.dispose();
      }
    });
  }

  test('parameter counts follow the equations; a joint vocabulary has one embedding matrix', () => {
    const config = resolveArchConfig('transformer', 'tiny') as {
      model: number;
      ff: number;
      encoderLayers: number;
      decoderLayers: number;
    };
    const { model: d, ff } = config;
    const V = joint.tgtVocab;
    const attention = 4 * (d * d + d);
    const norm = 2 * d;
    const feedForward = d * ff + ff + ff * d + d;
    const body =
      config.encoderLayers * (attention + 2 * norm + feedForward) +
      config.decoderLayers * (2 * attention + 3 * norm + feedForward) +
      2 * norm; // tiny is pre-norm: one more layer norm ends each stack
    const head = d * V + V; // learned
    for (const [sizes, embeddings] of [
      [joint, 1],
      [separate, 2],
    ] as const) {
      const model = buildModel('transformer', config, sizes, { name: 'learned' }, SEED);
      try {
        assert.equal(model.params.counts().learnable, body + embeddings * V * d + head);
        assert.equal(model.params.learnable.has('encoder/embedding'), embeddings === 2);
      } finally {
        model.params.dispose();
      }
    }
  });

  test('settings are checked, and a learned position table refuses positions past its end', () => {
    assert.throws(
      () => resolveArchConfig('transformer', 'tiny', { norm: 'middle' }),
      /architecture 'transformer': setting 'norm'/,
    );
    assert.throws(
      () =>
        buildModel(
          'transformer',
          resolveArchConfig('transformer', 'tiny', { heads: 3 }),
          joint,
          { name: 'learned' },
          1,
        ),
      /not a multiple of 3 heads/,
    );
    const config = resolveArchConfig('transformer', 'tiny', { positions: 'learned', maxPositions: 4 });
    const model = buildModel('transformer', config, joint, { name: 'learned' }, SEED);
    try {
      const batch = makeBatch(pairs, planBatches(pairs, { seed: 1, maxSentences: 4 }, 0)[0]);
      assert.throws(() => model.lossSum(batch, false), /past the table's 4 rows/);
    } finally {
      model.params.dispose();
    }
  });

  test('the exported graphs read a learned table clamped to its last row: a longer served input decodes, not fails', async () => {
    const config = resolveArchConfig('transformer', 'tiny', { positions: 'learned', maxPositions: 4 });
    const model = buildModel('transformer', config, joint, { name: 'learned' }, SEED);
    try {
      const { encoder, decoder } = model.toOnnx();
      const enc = await ort.InferenceSession.create(encoder.toBytes());
      const dec = await ort.InferenceSession.create(decoder.toBytes());
      const S = 9; // past the 4 rows
      let feeds: Record<string, ort.Tensor> = await enc.run({
        src_ids: new ort.Tensor(
          'int64',
          BigInt64Array.from({ length: S }, (_, i) => BigInt(4 + i)),
          [1, S],
        ),
        src_lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(S)]), [1]),
      });
      for (let t = 0; t < 6; t++) {
        const out = await dec.run({ ...feeds, prev_token: new ort.Tensor('int64', BigInt64Array.from([2n]), [1]) });
        const logProbs = out.log_probs.data as Float32Array;
        assert.ok(logProbs.every(Number.isFinite), `step ${t}: finite log-probs`);
        const next: Record<string, ort.Tensor> = { ...feeds };
        for (const [name, value] of Object.entries(out)) if (name.startsWith('next_')) next[name.slice(5)] = value;
        feeds = next;
      }
    } finally {
      model.params.dispose();
    }
  });
});
