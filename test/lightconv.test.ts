import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { newRunConfig } from '../clients/cli/commands/train-config.ts';
import { getExperiment } from '../experiments/index.ts';
import type { LightConvModel } from '../models/archs/lightconv.ts';
import {
  archDefinition,
  buildModel,
  headNames,
  resolveArchConfig,
  type ModelSizes,
  type Seq2SeqModel,
} from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import type { EncodedPair } from '../train/data/batches.ts';
import { toyJointPairs } from './helpers/toy-pairs.ts';
import { toyRunFlags } from './helpers/toy-run.ts';
import { trainSteps } from './helpers/train-steps.ts';

const ARCHS = ['lightconv', 'dynamicconv'] as const;
const SEED = 5;
const BOS = 2;
const PAD = 0;
let pairs: EncodedPair[];
let joint: ModelSizes;
let separate: ModelSizes;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  ({ pairs, joint, separate } = toyJointPairs({ seed: 1, train: 200 }));
});

/** A few Adam steps on the first two batches of 16 sentences. */
function train(model: Seq2SeqModel, steps: number): number[] {
  return trainSteps(model, pairs, steps, { learningRate: 3e-3, maxSentences: 16, batches: 2 });
}

for (const arch of ARCHS) {
  describe(`${arch}: every head trains (joint vocabulary)`, () => {
    for (const head of headNames()) {
      test(`${head}: the loss falls over training steps, with no tensor leaked`, () => {
        // DropConnect and dropout on, so that the training path with them runs too.
        const config = resolveArchConfig(arch, 'tiny', { weightDropout: 0.1, dropout: 0.1 });
        const model = buildModel(arch, config, joint, { name: head }, SEED);
        try {
          const losses = train(model, 6);
          const first = (losses[0] + losses[1]) / 2;
          const last = (losses[4] + losses[5]) / 2;
          assert.ok(last < first, `loss did not fall: ${losses.map((l) => l.toFixed(3)).join(' ')}`);
        } finally {
          model.params.dispose();
        }
      });
    }
  });
}

/** Sources and teacher-forced target inputs, padded: src [B, S] with lengths, tgtIn [B, T]. */
interface Forced {
  src: Int32Array;
  lengths: Int32Array;
  tgtIn: Int32Array;
  B: number;
  S: number;
  T: number;
}

/** Rows of the toy pairs, <s> y padded, each target continued with further tokens up to `T` when given. */
function forcedBatch(rows: EncodedPair[], T?: number): Forced {
  const B = rows.length;
  const S = Math.max(...rows.map((p) => p.src.length));
  const width = T ?? Math.max(...rows.map((p) => p.tgt.length)) + 1;
  const src = new Int32Array(B * S).fill(PAD);
  const tgtIn = new Int32Array(B * width).fill(PAD);
  rows.forEach((p, b) => {
    src.set(p.src, b * S);
    tgtIn[b * width] = BOS;
    for (let t = 1; t < width; t++) tgtIn[b * width + t] = p.tgt[(t - 1) % p.tgt.length];
  });
  return { src, lengths: Int32Array.from(rows, (p) => p.src.length), tgtIn, B, S, T: width };
}

/**
 * The largest difference between `step` run from `encode` over tgtIn and `forcedLogProbs` over all of it. The
 * decoder is causal, so every position counts, padding included: a step sees exactly what the forced decoder saw.
 */
function stepVsForced(model: LightConvModel, f: Forced): number {
  const { B, S, T } = f;
  const ids = () => tf.tensor2d(f.src, [B, S], 'int32');
  const lengths = () => tf.tensor1d(f.lengths, 'int32');
  const forced = tf.tidy(() => model.forcedLogProbs(ids(), lengths(), tf.tensor2d(f.tgtIn, [B, T], 'int32')));
  const expected = forced.dataSync();
  const V = forced.shape[2];
  forced.dispose();
  let state = tf.tidy(() => model.encode({ kind: 'tokens', ids: ids(), lengths: lengths() }));
  let worst = 0;
  for (let t = 0; t < T; t++) {
    const prev = Int32Array.from({ length: B }, (_, b) => f.tgtIn[b * T + t]);
    const step = tf.tidy(() => model.step(tf.tensor1d(prev, 'int32'), state));
    const got = step.logProbs.dataSync();
    for (let b = 0; b < B; b++)
      for (let v = 0; v < V; v++) {
        const want = expected[(b * T + t) * V + v];
        worst = Math.max(worst, Math.abs(got[b * V + v] - want) / Math.max(1, Math.abs(want)));
      }
    step.logProbs.dispose();
    tf.dispose(model.stateNames.map((name) => state[name]));
    state = { ...state, ...step.state };
  }
  assert.deepEqual(Array.from(state.position.dataSync()), new Array<number>(B).fill(T));
  tf.dispose(Object.values(state));
  return worst;
}

describe('step-by-step decoding equals the teacher-forced decoder', () => {
  // Widths 1 (no window), even (the encoder's padLeft (K − 1) // 2) and wider than a one-token sentence.
  const kernels = { encoderLayers: 3, decoderLayers: 3, encoderKernels: [2, 9, 1], decoderKernels: [1, 4, 9] };
  const variants: [string, Record<string, unknown>, () => ModelSizes][] = [
    ['post-norm, sinusoidal, no GLU, joint vocabulary', { norm: 'post', glu: false }, () => joint],
    ['pre-norm, learned positions, GLU, separate vocabularies', { positions: 'learned' }, () => separate],
    // fairseq's positions (imported fairseq lightconv models: train/import/fairseq-lightconv.ts): the step's position
    // state counts from 0 and the vectors from fairseq's first position, 2.
    [
      "post-norm, fairseq's sinusoids, GLU, separate vocabularies",
      { norm: 'post', positions: 'sinusoidal-fairseq' },
      () => separate,
    ],
  ];
  for (const arch of ARCHS)
    for (const [name, set, sizes] of variants) {
      test(`${arch}, ${name}: within 1e-4 for a batch, a one-token sentence and a prefix past the training lengths`, () => {
        const config = resolveArchConfig(arch, 'tiny', { ...kernels, ...set });
        const model = buildModel(arch, config, sizes(), { name: 'tied' }, SEED) as LightConvModel;
        try {
          train(model, 2); // away from the initial weights (LN gains 1, biases 0)
          assert.deepEqual(model.stateNames, ['position', 'conv_window_1', 'conv_window_2']);
          const longest = Math.max(...pairs.map((p) => p.tgt.length));
          const checks: [string, Forced][] = [
            ['a batch of 4', forcedBatch(pairs.slice(0, 4))],
            ['one token', forcedBatch([{ src: [pairs[0].src[0]], tgt: [pairs[0].tgt[0]] }], 1)],
            [`${longest + 9} target positions`, forcedBatch(pairs.slice(4, 6), longest + 9)],
          ];
          for (const [what, f] of checks) {
            const worst = stepVsForced(model, f);
            assert.ok(worst <= 1e-4, `${what}: steps differ from the forced decoder by ${worst}`);
          }
        } finally {
          model.params.dispose();
        }
      });
    }
});

describe('settings', () => {
  test('every preset of both architectures passes the schema, and the kernel lists match the layers', () => {
    for (const arch of ARCHS)
      for (const preset of Object.keys(archDefinition(arch).presets)) {
        const config = resolveArchConfig(arch, preset) as Record<string, number | number[]>;
        assert.equal((config.encoderKernels as number[]).length, config.encoderLayers, `${arch}/${preset}`);
        assert.equal((config.decoderKernels as number[]).length, config.decoderLayers, `${arch}/${preset}`);
      }
  });

  test('a kernel list that does not match its layer count is refused in one line naming the setting', async () => {
    // A layer count changed without the widths: the preset's list no longer matches.
    assert.throws(
      () => resolveArchConfig('dynamicconv', 'iwslt', { decoderLayers: 5 }),
      /^RangeError: architecture 'dynamicconv': setting 'decoderKernels' has 6 widths for 5 decoderLayers/,
    );
    // The widths given (as --set encoderKernels=[3,5,7] parses) without the layer count.
    assert.throws(
      () => resolveArchConfig('lightconv', 'tiny', { encoderKernels: [3, 5, 7] }),
      /^RangeError: architecture 'lightconv': setting 'encoderKernels' has 3 widths for 2 encoderLayers/,
    );
    // As `frost train --set 'decoderKernels=[3,5,7]'` hands it on: refused before any run folder is made.
    const runDir = join(tmpdir(), `frost-lightconv-never-${process.pid}`);
    await assert.rejects(
      newRunConfig(
        toyRunFlags(join(runDir, 'toy'), { arch: 'dynamicconv', set: { decoderKernels: [3, 5, 7] } }),
        runDir,
      ),
      /^RangeError: architecture 'dynamicconv': setting 'decoderKernels' has 3 widths for 2 decoderLayers/,
    );
    assert.equal(existsSync(runDir), false);
    assert.throws(
      () => resolveArchConfig('lightconv', 'tiny', { heads: 3 }),
      /setting 'heads' does not divide the model size 64/,
    );
    const ok = resolveArchConfig('lightconv', 'tiny', { encoderLayers: 3, encoderKernels: [3, 5, 7] });
    assert.deepEqual(ok.encoderKernels, [3, 5, 7]);
  });

  test('frost experiment mt-heads takes both architectures: a bad preset is what it refuses, before any data is read', async () => {
    const out = join(tmpdir(), `frost-lightconv-mt-heads-never-${process.pid}`);
    for (const arch of ARCHS)
      await assert.rejects(
        getExperiment('mt-heads').run({ data: 'toy', budgetMinutes: 1, arch, preset: 'paper', out, log: () => {} }),
        { message: `unknown preset 'paper' for '${arch}'; presets: tiny, small, iwslt, wmt` },
      );
    assert.equal(existsSync(out), false);
  });

  test('parameter counts follow the equations; a joint vocabulary has one embedding matrix', () => {
    const config = resolveArchConfig('lightconv', 'tiny') as { model: number; heads: number; ff: number };
    const { model: d, heads: H, ff } = config;
    const V = joint.tgtVocab;
    const norm = 2 * d;
    const feedForward = d * ff + ff + ff * d + d;
    const attention = 4 * (d * d + d);
    // tiny has GLU: the input projection is d → 2d.
    const projections = d * 2 * d + 2 * d + d * d + d;
    const kernelParams = { lightconv: (K: number) => H * K, dynamicconv: (K: number) => d * H * K };
    for (const arch of ARCHS) {
      const kernel = kernelParams[arch];
      const body =
        [3, 5].reduce((sum, K) => sum + projections + kernel(K) + 2 * norm + feedForward, 0) +
        [3, 5].reduce((sum, K) => sum + projections + kernel(K) + attention + 3 * norm + feedForward, 0) +
        2 * norm; // tiny is pre-norm: one more layer norm ends each stack
      const head = d * V + V; // learned
      for (const [sizes, embeddings] of [
        [joint, 1],
        [separate, 2],
      ] as const) {
        const model = buildModel(arch, config, sizes, { name: 'learned' }, SEED);
        try {
          assert.equal(model.params.counts().learnable, body + embeddings * V * d + head, `${arch}`);
          assert.equal(model.params.learnable.has('encoder/embedding'), embeddings === 2);
        } finally {
          model.params.dispose();
        }
      }
    }
  });
});
