/**
 * LightConv and DynamicConv (models/archs/lightconv.ts) through export (models/archs/lightconv-onnx.ts): parity with
 * tfjs for the output heads; the incremental step graph, fed its own windows and position, equals the tfjs whole
 * decoder over a prefix, with state that never grows, in onnxruntime-node and -web; and a trained toy run through
 * `frost export`'s pipeline: the card, the checker, Triton, `frost inspect`, fp16 / int8 / int8-compute, beam
 * search (which reorders the windows' rows), `frost serve`, and inputs the training never showed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { exportRun } from '../export/export-run.ts';
import { formatInspect, inspectModel } from '../export/inspect.ts';
import { checkParity, PARITY_TOLERANCE } from '../export/parity.ts';
import type { LightConvModel } from '../models/archs/lightconv.ts';
import { buildModel, headNames, resolveArchConfig, type ModelSizes, type Seq2SeqModel } from '../models/index.ts';
import { startServer } from '../serve/server.ts';
import { initBackend } from '../train/backend/select.ts';
import type { EncodedPair } from '../train/data/batches.ts';
import { checkModel, openOrt, type Feed, type TensorResult } from './helpers/onnx-check.ts';
import { cachedToyRun } from './helpers/toy-fixtures.ts';
import { toyJointPairs } from './helpers/toy-pairs.ts';
import { trainSteps } from './helpers/train-steps.ts';

const SEED = 7;
const BOS = 2;
const PAD = 0;
let pairs: EncodedPair[];
let sizes: ModelSizes;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  ({ pairs, separate: sizes } = toyJointPairs({ seed: 1, train: 200 }));
});

/** A tiny model a couple of Adam steps away from its initial weights (LN gains 1, biases 0 hide mistakes). */
function trained(arch: string, head: string, set: Record<string, unknown> = {}): Seq2SeqModel {
  const model = buildModel(arch, resolveArchConfig(arch, 'tiny', set), sizes, { name: head }, SEED);
  trainSteps(model, pairs, 2, { learningRate: 3e-3, maxSentences: 16, batches: 2 });
  return model;
}

/** Parity samples: the longest targets (the windows shift many times) and a one-token sentence. */
function paritySamples(): { src: Int32Array; tgt: Int32Array }[] {
  const longest = [...pairs].sort((a, b) => b.tgt.length - a.tgt.length).slice(0, 3);
  return [...longest, { src: [pairs[0]!.src[0]!], tgt: [pairs[0]!.tgt[0]!] }].map((p) => ({
    src: Int32Array.from(p.src),
    tgt: Int32Array.from(p.tgt),
  }));
}

describe('export parity with tfjs, per output head', () => {
  // Every head on one architecture, a few on the other: the heads' own emission is shared with every architecture.
  const cases: [string, string[]][] = [
    ['dynamicconv', headNames()],
    ['lightconv', ['learned', 'tied', 'fixed-l2']],
  ];
  for (const [arch, heads] of cases)
    for (const head of heads)
      test(`${arch}, ${head}: within ${PARITY_TOLERANCE} at every step`, async () => {
        const model = trained(arch, head);
        try {
          const { encoder, decoder, graphs } = model.toOnnx();
          assert.deepEqual(graphs.decoder.state, ['position', 'conv_window_0', 'conv_window_1']);
          const parity = await checkParity(model, encoder.toBytes(), decoder.toBytes(), paritySamples(), BOS, PAD);
          assert.ok(parity.steps >= 8, `targets of ${parity.steps} steps do not shift the windows enough`);
          assert.ok(
            parity.maxScaledDiff <= PARITY_TOLERANCE,
            `parity ${parity.maxScaledDiff} at ${JSON.stringify(parity.worst)}`,
          );
        } finally {
          model.params.dispose();
        }
      });
});

/** Sources and teacher-forced target inputs, padded: <s> y, each target continued with its tokens up to T. */
function forcedBatch(rows: EncodedPair[], T: number) {
  const B = rows.length;
  const S = Math.max(...rows.map((p) => p.src.length));
  const src = new Int32Array(B * S).fill(PAD);
  const tgtIn = new Int32Array(B * T).fill(PAD);
  rows.forEach((p, b) => {
    src.set(p.src, b * S);
    tgtIn[b * T] = BOS;
    for (let t = 1; t < T; t++) tgtIn[b * T + t] = p.tgt[(t - 1) % p.tgt.length]!;
  });
  return { src, lengths: Int32Array.from(rows, (p) => p.src.length), tgtIn, B, S, T };
}

function maxScaledDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / Math.max(1, Math.abs(b[i]!)));
  return worst;
}

/**
 * Each step's log_probs of the exported graphs fed their own state (onnxruntime-node, or -web with `web`), the state's
 * shapes after every step, and the final positions.
 */
async function onnxSteps(model: Seq2SeqModel, f: ReturnType<typeof forcedBatch>, steps: number, web = false) {
  const { encoder, decoder } = model.toOnnx();
  const [enc, dec] = [await openOrt(encoder.toBytes(), web), await openOrt(decoder.toBytes(), web)];
  const asFeed = (t: TensorResult): Feed => ({ dims: t.dims, data: t.data });
  try {
    const encOut = await enc.run({
      src_ids: { dims: [f.B, f.S], data: BigInt64Array.from(f.src, BigInt) },
      src_lengths: { dims: [f.B], data: BigInt64Array.from(f.lengths, BigInt) },
    });
    const feeds: Record<string, Feed> = {};
    for (const n of [...model.stateNames, ...model.memoryNames]) feeds[n] = asFeed(encOut[n]!);
    const logProbs: Float32Array[] = [];
    const shapes: string[] = [];
    for (let t = 0; t < steps; t++) {
      const prev = BigInt64Array.from({ length: f.B }, (_, b) => BigInt(f.tgtIn[b * f.T + t]!));
      const out = await dec.run({ ...feeds, prev_token: { dims: [f.B], data: prev } });
      logProbs.push(out.log_probs!.data as Float32Array);
      for (const n of model.stateNames) feeds[n] = asFeed(out[`next_${n}`]!);
      shapes.push(model.stateNames.map((n) => feeds[n]!.dims.join('×')).join(' '));
    }
    return { logProbs, shapes, position: Array.from(feeds.position!.data as BigInt64Array, Number) };
  } finally {
    await enc.release();
    await dec.release();
  }
}

describe('the incremental ONNX decoder', () => {
  // Widths 1 (no window), even and wider than a short sentence; both norms, with and without GLU.
  const kernels = { encoderLayers: 3, decoderLayers: 3, encoderKernels: [2, 9, 1], decoderKernels: [1, 4, 9] };
  const variants: [string, Record<string, unknown>][] = [
    ['lightconv', { norm: 'post', glu: false }],
    ['dynamicconv', { positions: 'learned' }],
  ];
  for (const [arch, set] of variants)
    test(`${arch} (${JSON.stringify(set)}): steps equal tfjs's whole decoder over a prefix; the state never grows`, async () => {
      const model = trained(arch, 'tied', { ...kernels, ...set }) as LightConvModel;
      try {
        assert.deepEqual(model.stateNames, ['position', 'conv_window_1', 'conv_window_2']);
        const longest = Math.max(...pairs.map((p) => p.tgt.length));
        const f = forcedBatch([...pairs.slice(0, 3), { src: [pairs[3]!.src[0]!], tgt: [] }], longest + 4);
        const full = tf.tidy(() =>
          model.forcedLogProbs(
            tf.tensor2d(f.src, [f.B, f.S], 'int32'),
            tf.tensor1d(f.lengths, 'int32'),
            tf.tensor2d(f.tgtIn, [f.B, f.T], 'int32'),
          ),
        );
        const expected = full.dataSync() as Float32Array;
        const V = full.shape[2];
        full.dispose();
        const { logProbs, shapes, position } = await onnxSteps(model, f, f.T);
        let worst = 0;
        logProbs.forEach((step, t) => {
          const want = new Float32Array(f.B * V);
          for (let b = 0; b < f.B; b++) want.set(expected.subarray((b * f.T + t) * V, (b * f.T + t + 1) * V), b * V);
          worst = Math.max(worst, maxScaledDiff(step, want));
        });
        assert.ok(worst <= PARITY_TOLERANCE, `onnx steps vs tfjs whole decoder: ${worst}`);
        assert.deepEqual(new Set(shapes).size, 1, `state shapes changed: ${[...new Set(shapes)].join(' | ')}`);
        assert.equal(shapes[0], `${f.B} ${f.B}×3×64 ${f.B}×8×64`);
        assert.deepEqual(position, new Array<number>(f.B).fill(f.T));

        // The browser runtime computes the same steps.
        const web = await onnxSteps(model, f, 4, true);
        web.logProbs.forEach((step, t) => {
          const diff = maxScaledDiff(step, logProbs[t]!);
          assert.ok(diff <= 1e-5, `step ${t}: onnxruntime-web vs -node ${diff}`);
        });
      } finally {
        model.params.dispose();
      }
    });
});

describe('a trained dynamicconv run through frost export', () => {
  let dir: string;
  let runDir: string;
  let dataDir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'frost-lightconv-export-'));
    // A short run, trained once per content hash of the code that trains it (cached-fixture.ts) and only read
    // here: the exports need real weights, not a good model.
    ({ runDir, dataDir } = await cachedToyRun({
      head: 'fixed-l2',
      corpus: { seed: 2, train: 300, val: 10, test: 10 },
      config: { arch: 'dynamicconv', epochs: 1, optim: { learningRate: 3e-3 } },
    }));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const sources = async () => (await readFile(join(dataDir, 'test.src'), 'utf8')).trim().split('\n').slice(0, 5);

  test('fp32: parity, the card, valid graphs, Triton, inspect; beam search, alone or batched, and odd inputs', async () => {
    const modelDir = join(dir, 'fp32');
    const triton = join(dir, 'triton');
    const { card, parity } = await exportRun(runDir, modelDir, { quiet: true, triton });
    assert.ok(parity.maxScaledDiff <= PARITY_TOLERANCE, `parity ${parity.maxScaledDiff}`);
    assert.equal(card.arch, 'dynamicconv');
    assert.deepEqual(card.graphs.decoder.state, ['position', 'conv_window_0', 'conv_window_1']);
    assert.deepEqual(
      card.graphs.encoder.outputs.sort(),
      [...card.graphs.decoder.state, ...card.graphs.decoder.memory].sort(),
    );
    for (const file of ['encoder.onnx', 'decoder.onnx']) checkModel(join(modelDir, file));
    assert.match(formatInspect(await inspectModel(modelDir)), /^[^\n]*: dynamicconv tiny, head fixed-l2/);
    // Triton: the windows are batched inputs of a fixed shape, the position a batched scalar.
    const decoderConfig = await readFile(join(triton, `${card.name}_decoder`, 'config.pbtxt'), 'utf8');
    assert.match(decoderConfig, /name: "conv_window_1"\s+data_type: TYPE_FP32\s+dims: \[ 4, 64 \]/);
    assert.match(decoderConfig, /name: "next_position"/);

    const runtime = await loadModelDir(modelDir);
    try {
      const src = await sources();
      const beam = await runtime.translate(src, { beam: 4 });
      // One sentence at a time: no other sentence's rows in the windows when beam search reorders them.
      for (const [i, line] of src.entries()) {
        const [alone] = await runtime.translate([line], { beam: 4 });
        assert.equal(beam[i]!.text, alone!.text);
        assert.ok(Math.abs(beam[i]!.score - alone!.score) < 1e-4, `${beam[i]!.score} vs ${alone!.score}`);
      }
      // With Triton the step reads one memory row per step row; frost's own export one per source, shared by its
      // beams (graphs.decoder.groupedMemory): the same beams either way.
      assert.equal(card.graphs.decoder.groupedMemory, undefined);
      const groupedDir = join(dir, 'fp32-grouped');
      const grouped = await exportRun(runDir, groupedDir, { quiet: true });
      assert.equal(grouped.card.graphs.decoder.groupedMemory, true);
      assert.ok(grouped.parity.maxScaledDiff <= PARITY_TOLERANCE, `parity ${grouped.parity.maxScaledDiff}`);
      const groupedRuntime = await loadModelDir(groupedDir);
      const groupedBeam = await groupedRuntime.translate(src, { beam: 4 }).finally(() => groupedRuntime.release());
      assert.deepEqual(
        groupedBeam.map((t) => t.tokens),
        beam.map((t) => t.tokens),
      );
      groupedBeam.forEach((t, i) => assert.ok(Math.abs(t.score - beam[i]!.score) < 1e-4, `${t.score}`));
      // A one-token source (narrower than every kernel), and one longer than any the model trained on.
      const words = src.join(' ').split(' ');
      const odd = [words[0]!, Array.from({ length: 60 }, (_, i) => words[i % words.length]).join(' ')];
      for (const t of await runtime.translate(odd, { beam: 4, maxLen: 70 }))
        assert.ok(Number.isFinite(t.score), `score ${t.score}`);
    } finally {
      await runtime.release();
    }
  });

  for (const precision of ['fp16', 'int8', 'int8-compute'] as const)
    test(`${precision}: exports with its precision check, loads and translates`, async () => {
      const modelDir = join(dir, precision);
      const { card, precisionCheck } = await exportRun(runDir, modelDir, {
        quiet: true,
        precision,
        precisionSentences: 10,
      });
      assert.equal(card.precision, precision);
      assert.ok(precisionCheck, 'no precision check');
      const runtime = await loadModelDir(modelDir);
      const out = await runtime.translate(await sources(), { beam: 2 });
      await runtime.release();
      for (const t of out) assert.ok(Number.isFinite(t.score), `score ${t.score}`);
    });

  test('frost serve answers as the runtime does', async () => {
    const modelDir = join(dir, 'fp32');
    const src = await sources();
    const runtime = await loadModelDir(modelDir);
    const expected = await runtime.translate(src, { beam: 3 });
    await runtime.release();
    const server = await startServer({ modelsDir: modelDir, port: 0, intraOpNumThreads: 1, workers: 1, log: () => {} });
    try {
      const res = await fetch(`${server.url}/v1/translate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ texts: src, beam: 3 }),
      });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { translations: { text: string; score: number }[] };
      body.translations.forEach((t, i) => {
        assert.equal(t.text, expected[i]!.text);
        assert.ok(Math.abs(t.score - expected[i]!.score) < 1e-4);
      });
    } finally {
      await server.close();
    }
  });
});
