/**
 * ConvS2S (models/archs/convs2s.ts): every output head trains and exports with ONNX parity; the
 * incremental decoder (per-layer convolution windows as state) equals the whole decoder run over the
 * prefix, in tfjs and in onnxruntime; the step graph's work does not depend on the position.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { ort } from '../core/runtime/ort-node.ts';
import { checkParity, PARITY_TOLERANCE } from '../export/parity.ts';
import type { Convs2sModel } from '../models/archs/convs2s.ts';
import { parseConvs2sLayers } from '../models/archs/convs2s-layers.ts';
import { buildModel, headNames, resolveArchConfig, type NamedTensors, type Seq2SeqModel } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { makeBatch, planBatches, type EncodedPair } from '../train/data/batches.ts';
import { Adam } from '../train/optim/adam.ts';
import { runOrt, runOrtWeb, type Feed, type TensorResult } from './helpers/onnx-check.ts';
import { startOnnxChecker, type OnnxChecker } from './helpers/onnx-checker.ts';
import { toyWordPairs } from './helpers/toy-pairs.ts';

const SEED = 11;
const BOS = 2;
const PAD = 0;
let pairs: EncodedPair[];
let sizes: { srcVocab: number; tgtVocab: number };
const config = resolveArchConfig('convs2s', 'tiny');
/** One Python checker for the file's models: a Python start per model cost more than the check. */
let checker: OnnxChecker;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  ({ pairs, sizes } = toyWordPairs({ seed: 1, train: 600, val: 10, test: 10 }));
  checker = await startOnnxChecker();
});

after(() => checker.close());

/** Parity samples with the longest targets of the corpus, so the windows shift many times. */
function longSamples(count: number): { src: Int32Array; tgt: Int32Array }[] {
  return [...pairs]
    .sort((a, b) => b.tgt.length - a.tgt.length)
    .slice(0, count)
    .map((p) => ({ src: Int32Array.from(p.src), tgt: Int32Array.from(p.tgt) }));
}

/** Losses of `steps` Adam steps, and the tensors the steps after the first left behind (the first makes moments). */
function trainSteps(model: Seq2SeqModel, steps: number): { losses: number[]; leaked: number } {
  const optimizer = new Adam(model.params.learnable, { learningRate: 3e-3 });
  const plan = planBatches(pairs, { seed: 1, maxSentences: 32 }, 0);
  const losses: number[] = [];
  let afterFirst = 0;
  for (let i = 0; i < steps; i++) {
    const batch = makeBatch(pairs, plan[i % plan.length]!);
    losses.push(optimizer.minimize(() => tf.div(model.lossSum(batch, true), batch.tokens) as tf.Scalar).loss);
    if (i === 0) afterFirst = tf.memory().numTensors;
  }
  const leaked = tf.memory().numTensors - afterFirst;
  optimizer.dispose();
  return { losses, leaked };
}

describe('convs2s settings', () => {
  test('layer stacks parse as channels:width*count; a malformed one is refused with the setting named', () => {
    assert.deepEqual(parseConvs2sLayers('512:3*2,2048:1', 'encoderLayers'), [
      { channels: 512, width: 3 },
      { channels: 512, width: 3 },
      { channels: 2048, width: 1 },
    ]);
    assert.throws(() => resolveArchConfig('convs2s', 'tiny', { encoderLayers: '512x3' }), {
      message: /architecture 'convs2s': setting 'encoderLayers' expects channels:width\*count/,
    });
    assert.throws(() => buildModel('convs2s', { ...config, encoderLayers: '32:2' }, sizes, { name: 'learned' }, 1), {
      message: /encoder convolutions need odd widths/,
    });
  });

  test("the wmt preset is the paper's WMT'14 en-de shape (15 layers of 512/1024/2048, embeddings 768)", () => {
    const wmt = resolveArchConfig('convs2s', 'wmt') as {
      encoderLayers: string;
      decoderLayers: string;
      embedding: number;
    };
    for (const stack of [wmt.encoderLayers, wmt.decoderLayers]) {
      const layers = parseConvs2sLayers(stack, 'layers');
      assert.equal(layers.length, 15);
      assert.deepEqual(
        layers.map((l) => `${l.channels}:${l.width}`),
        [...Array(9).fill('512:3'), ...Array(4).fill('1024:3'), ...Array(2).fill('2048:1')],
      );
    }
    assert.equal(wmt.embedding, 768);
  });
});

describe('convs2s output heads', () => {
  for (const head of headNames()) {
    test(`${head}: training steps lower the loss without leaking tensors; ONNX export with parity`, async () => {
      const model = buildModel('convs2s', config, sizes, { name: head }, SEED);
      try {
        const { losses, leaked } = trainSteps(model, 12);
        assert.equal(leaked, 0, 'training steps leaked tensors');
        const first = (losses[0]! + losses[1]!) / 2;
        const last = (losses[10]! + losses[11]!) / 2;
        assert.ok(last < first, `loss did not fall: ${losses.map((l) => l.toFixed(3)).join(' ')}`);

        const { encoder, decoder } = model.toOnnx();
        const encoderBytes = encoder.toBytes();
        const decoderBytes = decoder.toBytes();
        await checker.check(encoderBytes);
        await checker.check(decoderBytes);
        const parity = await checkParity(model, encoderBytes, decoderBytes, longSamples(4), BOS, PAD);
        assert.ok(parity.steps >= 8, `targets of ${parity.steps} steps do not shift the windows enough`);
        assert.ok(
          parity.maxScaledDiff <= PARITY_TOLERANCE,
          `parity ${parity.maxScaledDiff} at ${JSON.stringify(parity.worst)}`,
        );
      } finally {
        model.params.dispose();
      }
    });
  }
});

/** Largest |a − b| / max(1, |b|). */
function maxScaledDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / Math.max(1, Math.abs(b[i]!)));
  return worst;
}

describe('convs2s with a joint (subword) vocabulary', () => {
  test('one embedding matrix for source, target and a tied head; trains and exports with parity', async () => {
    const V = Math.max(sizes.srcVocab, sizes.tgtVocab);
    const model = buildModel(
      'convs2s',
      config,
      { srcVocab: V, tgtVocab: V, jointEmbedding: true },
      { name: 'tied' },
      SEED,
    );
    try {
      assert.ok(!model.params.learnable.has('encoder/embedding'));
      assert.ok(model.params.learnable.has('decoder/embedding'));
      const { losses, leaked } = trainSteps(model, 6);
      assert.equal(leaked, 0);
      assert.ok(losses[5]! < losses[0]!, losses.join(' '));
      const { encoder, decoder } = model.toOnnx();
      const parity = await checkParity(model, encoder.toBytes(), decoder.toBytes(), longSamples(3), BOS, PAD);
      assert.ok(parity.maxScaledDiff <= PARITY_TOLERANCE, `parity ${parity.maxScaledDiff}`);
    } finally {
      model.params.dispose();
    }
    assert.throws(
      () => buildModel('convs2s', config, { srcVocab: 10, tgtVocab: 12, jointEmbedding: true }, { name: 'tied' }, 1),
      { message: /joint embedding needs one vocabulary/ },
    );
  });
});

describe('convs2s incremental decoder', () => {
  /** A trained tiny model (weights away from their initial values) and a padded batch with teacher-forced targets. */
  function setup(decoderLayers?: string) {
    const cfg = decoderLayers ? { ...config, decoderLayers } : config;
    const model = buildModel('convs2s', cfg, sizes, { name: 'tied' }, SEED) as Convs2sModel;
    trainSteps(model, 6);
    const samples = longSamples(3).concat([
      { src: Int32Array.from(pairs[0]!.src), tgt: Int32Array.from(pairs[0]!.tgt) },
    ]);
    const B = samples.length;
    const S = Math.max(...samples.map((s) => s.src.length));
    const T = Math.max(...samples.map((s) => s.tgt.length)) + 1;
    const src = new Int32Array(B * S).fill(PAD);
    const tgtIn = new Int32Array(B * T).fill(PAD);
    samples.forEach((s, b) => {
      src.set(s.src, b * S);
      tgtIn[b * T] = BOS;
      tgtIn.set(s.tgt, b * T + 1);
    });
    const lengths = Int32Array.from(samples, (s) => s.src.length);
    return { model, B, S, T, src, tgtIn, lengths };
  }

  for (const layers of [undefined, '40:3,56:5,56:1,32:2']) {
    test(`tfjs: T steps with windows equal the whole decoder over the prefix (${layers ?? 'tiny preset'})`, () => {
      const { model, B, S, T, src, tgtIn, lengths } = setup(layers);
      try {
        const input = () => ({
          kind: 'tokens' as const,
          ids: tf.tensor2d(src, [B, S], 'int32'),
          lengths: tf.tensor1d(lengths, 'int32'),
        });
        const full = tf.tidy(() => model.teacherForcedLogProbs(input(), tf.tensor2d(tgtIn, [B, T], 'int32')));
        const fullData = full.dataSync() as Float32Array;
        const V = full.shape[2];
        let state: NamedTensors = tf.tidy(() => model.encode(input()));
        let worst = 0;
        for (let t = 0; t < T; t++) {
          const prev = Int32Array.from({ length: B }, (_, b) => tgtIn[b * T + t]!);
          const { logProbs, state: next } = tf.tidy(() => model.step(tf.tensor1d(prev, 'int32'), state));
          const step = logProbs.dataSync() as Float32Array;
          const expected = new Float32Array(B * V);
          for (let b = 0; b < B; b++) expected.set(fullData.subarray((b * T + t) * V, (b * T + t + 1) * V), b * V);
          worst = Math.max(worst, maxScaledDiff(step, expected));
          logProbs.dispose();
          for (const name of model.stateNames) state[name]!.dispose();
          state = { ...state, ...next };
        }
        tf.dispose([full, ...Object.values(state)]);
        assert.ok(T >= 8, `${T} steps`);
        assert.ok(worst <= 1e-5, `incremental vs full: ${worst}`);
      } finally {
        model.params.dispose();
      }
    });
  }

  test('onnxruntime: the exported step graph, fed its own windows, equals the tfjs whole decoder; state shapes never grow', async () => {
    const { model, B, S, T, src, tgtIn, lengths } = setup();
    try {
      const full = tf.tidy(() =>
        model.teacherForcedLogProbs(
          { kind: 'tokens', ids: tf.tensor2d(src, [B, S], 'int32'), lengths: tf.tensor1d(lengths, 'int32') },
          tf.tensor2d(tgtIn, [B, T], 'int32'),
        ),
      );
      const fullData = full.dataSync() as Float32Array;
      const V = full.shape[2];
      full.dispose();
      const { encoder, decoder } = model.toOnnx();
      const enc = await ort.InferenceSession.create(encoder.toBytes());
      const dec = await ort.InferenceSession.create(decoder.toBytes());
      const encOut = await enc.run({
        src_ids: new ort.Tensor('int64', BigInt64Array.from(src, BigInt), [B, S]),
        src_lengths: new ort.Tensor('int64', BigInt64Array.from(lengths, BigInt), [B]),
      });
      const feeds: Record<string, ort.Tensor> = {};
      for (const name of [...model.stateNames, ...model.memoryNames]) feeds[name] = encOut[name]!;
      const initialDims = model.stateNames.map((n) => feeds[n]!.dims.join(','));
      let worst = 0;
      for (let t = 0; t < T; t++) {
        const prev = BigInt64Array.from({ length: B }, (_, b) => BigInt(tgtIn[b * T + t]!));
        const out = await dec.run({ ...feeds, prev_token: new ort.Tensor('int64', prev, [B]) });
        const expected = new Float32Array(B * V);
        for (let b = 0; b < B; b++) expected.set(fullData.subarray((b * T + t) * V, (b * T + t + 1) * V), b * V);
        worst = Math.max(worst, maxScaledDiff(out.log_probs!.data as Float32Array, expected));
        for (const name of model.stateNames) feeds[name] = out[`next_${name}`]!;
        assert.deepEqual(
          model.stateNames.map((n) => feeds[n]!.dims.join(',')),
          initialDims,
        );
      }
      assert.deepEqual(Array.from(feeds.position!.data as BigInt64Array, Number), Array(B).fill(T));
      await enc.release();
      await dec.release();
      assert.ok(worst <= PARITY_TOLERANCE, `onnx steps vs tfjs full decoder: ${worst}`);
    } finally {
      model.params.dispose();
    }
  });

  test('onnxruntime-web (the browser runtime) runs the encoder and the step graph as onnxruntime-node does', async () => {
    const { model, B, S, T, src, tgtIn, lengths } = setup();
    try {
      const { encoder, decoder } = model.toOnnx();
      const encoderBytes = encoder.toBytes();
      const decoderBytes = decoder.toBytes();
      const encFeeds: Record<string, Feed> = {
        src_ids: { dims: [B, S], data: BigInt64Array.from(src, BigInt) },
        src_lengths: { dims: [B], data: BigInt64Array.from(lengths, BigInt) },
      };
      const asFeed = (t: TensorResult): Feed => ({ dims: t.dims, data: t.data });
      const runs = { node: runOrt, web: runOrtWeb };
      const logProbs: Record<string, Float32Array[]> = { node: [], web: [] };
      for (const [name, run] of Object.entries(runs)) {
        const encOut = await run(encoderBytes, encFeeds);
        const feeds: Record<string, Feed> = {};
        for (const n of [...model.stateNames, ...model.memoryNames]) feeds[n] = asFeed(encOut[n]!);
        for (let t = 0; t < Math.min(T, 6); t++) {
          const prev = BigInt64Array.from({ length: B }, (_, b) => BigInt(tgtIn[b * T + t]!));
          const out = await run(decoderBytes, { ...feeds, prev_token: { dims: [B], data: prev } });
          logProbs[name]!.push(out.log_probs!.data as Float32Array);
          for (const n of model.stateNames) feeds[n] = asFeed(out[`next_${n}`]!);
        }
      }
      for (let t = 0; t < logProbs.node!.length; t++) {
        const diff = maxScaledDiff(logProbs.web![t]!, logProbs.node![t]!);
        assert.ok(diff <= 1e-5, `step ${t}: web vs node ${diff}`);
      }
    } finally {
      model.params.dispose();
    }
  });
});
