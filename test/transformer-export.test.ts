/**
 * A trained Transformer through everything `frost export` offers, as for rnn-attn: the parity-checked
 * float32 graphs, fp16 / int8 / int8-compute weights, a Triton repository, `frost inspect`, the
 * model card, and translation through the runtime (greedy and beam search, which reorders the
 * key/value cache rows).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { exportRun } from '../export/export-run.ts';
import { formatInspect, inspectModel } from '../export/inspect.ts';
import { PARITY_TOLERANCE } from '../export/parity.ts';
import { resolveArchConfig } from '../models/index.ts';
import { startServer } from '../serve/server.ts';
import { initBackend } from '../train/backend/select.ts';
import { checkModel } from './helpers/onnx-check.ts';
import { trainToyRun } from './helpers/toy-run.ts';

let dir: string;
let runDir: string;
let dataDir: string;
const config = resolveArchConfig('transformer', 'tiny') as { heads: number; model: number; decoderLayers: number };

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-transformer-export-'));
  // A short run: the exports need real weights, not a good model.
  ({ runDir, dataDir } = await trainToyRun(dir, {
    head: 'fixed-l2',
    corpus: { seed: 2, train: 400, val: 20, test: 20 },
    config: { arch: 'transformer', epochs: 1, optim: { learningRate: 3e-3 } },
  }));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sources = async () => (await readFile(join(dataDir, 'test.src'), 'utf8')).trim().split('\n').slice(0, 6);

describe('transformer export', () => {
  test('fp32: parity, a card naming the caches, valid graphs, greedy and beam translations, inspect', async () => {
    const modelDir = join(dir, 'fp32');
    const { card, parity } = await exportRun(runDir, modelDir, { quiet: true });
    assert.ok(parity.maxScaledDiff <= PARITY_TOLERANCE, `parity ${parity.maxScaledDiff}`);
    assert.deepEqual(card.graphs.decoder.cache, {
      kind: 'append',
      length: 'cache_len',
      axis: 2,
      states: Object.fromEntries(card.graphs.decoder.state.map((n) => [n, `new_${n}`])),
    });
    assert.equal(card.arch, 'transformer');
    const L = config.decoderLayers;
    assert.equal(card.graphs.decoder.state.length, 2 * L);
    assert.equal(card.graphs.decoder.memory.length, 2 * L + 1);
    assert.deepEqual(
      card.graphs.encoder.outputs.sort(),
      [...card.graphs.decoder.state, ...card.graphs.decoder.memory].sort(),
    );
    for (const file of ['encoder.onnx', 'decoder.onnx']) checkModel(join(modelDir, file));

    const runtime = await loadModelDir(modelDir);
    const src = await sources();
    const greedy = await runtime.translate(src, { beam: 1 });
    const beam = await runtime.translate(src, { beam: 4 });
    // One sentence at a time: no other sentence's rows in the cache when beam search reorders it.
    const alone: typeof beam = [];
    for (const line of src) alone.push((await runtime.translate([line], { beam: 4 }))[0]);
    await runtime.release();
    assert.equal(greedy.length, src.length);
    assert.deepEqual(
      beam.map((t) => t.text),
      alone.map((t) => t.text),
    );
    beam.forEach((t, i) => assert.ok(Math.abs(t.score - alone[i].score) < 1e-4, `${t.score} vs ${alone[i].score}`));

    const text = formatInspect(await inspectModel(modelDir));
    assert.match(text, /^[^\n]*: transformer tiny, head fixed-l2/);

    // A Triton export keeps the Concat form (whole caches as next_self_*) and per-row memory, and decodes to the same
    // tokens: the append caches grow past their first chunk (8 positions) and are reordered and dropped by beam
    // search, and the grouped memory follows the beams as inputs finish.
    const concatDir = join(dir, 'fp32-concat');
    const triton = join(dir, 'triton');
    const concat = await exportRun(runDir, concatDir, { quiet: true, triton });
    assert.equal(concat.card.graphs.decoder.cache, undefined);
    // frost's own export reads the memory once per source (beams share it); the Concat form, one row per step row.
    assert.equal(card.graphs.decoder.groupedMemory, true);
    assert.equal(concat.card.graphs.decoder.groupedMemory, undefined);
    // minLen 12: past the first chunk whatever the toy model would emit.
    const long = { beam: 3, minLen: 12 };
    const appendLong = await loadModelDir(modelDir).then(async (rt) => {
      const out = await rt.translate(src, long);
      // Decoded again, the caches grow into the buffers the first decode's outgrown caches left in the runtime's
      // pool (core/runtime/buffer-pool.ts): the same hypotheses to the bit.
      const again = await rt.translate(src, long);
      assert.ok((rt as unknown as { buffers: { keptBytes: number } }).buffers.keptBytes > 0, 'nothing was pooled');
      assert.deepEqual(
        again.map((t) => [t.tokens, t.score]),
        out.map((t) => [t.tokens, t.score]),
      );
      await rt.release();
      return out;
    });
    const concatRuntime = await loadModelDir(concatDir);
    const concatGreedy = await concatRuntime.translate(src, { beam: 1 });
    const concatBeam = await concatRuntime.translate(src, { beam: 4 });
    const concatLong = await concatRuntime.translate(src, long);
    await concatRuntime.release();
    for (const [a, b] of [
      [greedy, concatGreedy],
      [beam, concatBeam],
      [appendLong, concatLong],
    ]) {
      assert.deepEqual(
        a!.map((t) => t.tokens),
        b!.map((t) => t.tokens),
      );
      a!.forEach((t, i) => assert.ok(Math.abs(t.score - b![i]!.score) < 1e-4, `${t.score} vs ${b![i]!.score}`));
    }

    // Triton: the caches are batched inputs with a dynamic length axis, [heads, -1, d/heads].
    const decoderConfig = await readFile(join(triton, `${concat.card.name}_decoder`, 'config.pbtxt'), 'utf8');
    const dk = config.model / config.heads;
    assert.match(
      decoderConfig,
      new RegExp(`name: "self_k_0"\\s+data_type: TYPE_FP32\\s+dims: \\[ ${config.heads}, -1, ${dk} \\]`),
    );
    assert.match(decoderConfig, /name: "next_self_v_\d"/);
  });

  for (const precision of ['fp16', 'int8', 'int8-compute'] as const) {
    test(`${precision}: smaller files that still translate, and a precision check in the card`, async () => {
      const modelDir = join(dir, precision);
      const { card, precisionCheck } = await exportRun(runDir, modelDir, {
        quiet: true,
        precision,
        precisionSentences: 20,
      });
      assert.equal(card.precision, precision);
      assert.ok(precisionCheck, 'no precision check');
      const fp32 = (await stat(join(dir, 'fp32', 'decoder.onnx'))).size;
      const size = (await stat(join(modelDir, 'decoder.onnx'))).size;
      assert.ok(size < 0.7 * fp32, `${precision} decoder ${size} bytes, fp32 ${fp32}`);
      const runtime = await loadModelDir(modelDir);
      const out = await runtime.translate(await sources(), { beam: 2 });
      await runtime.release();
      for (const t of out) assert.ok(Number.isFinite(t.score), `score ${t.score}`);
    });
  }

  test('frost serve (2 decode threads, dynamic batching, SSE streaming) answers as the runtime does', async () => {
    const modelDir = join(dir, 'fp32');
    const src = await sources();
    const runtime = await loadModelDir(modelDir);
    const expected = await runtime.translate(src, { beam: 3 });
    await runtime.release();
    const server = await startServer({ modelsDir: modelDir, port: 0, intraOpNumThreads: 1, workers: 2, log: () => {} });
    try {
      const post = (body: unknown, query = '') =>
        fetch(`${server.url}/v1/translate${query}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      // One request per sentence, all at once: the batcher decodes them together.
      const answers = await Promise.all(
        src.map(async (text) => {
          const res = await post({ text, beam: 3 });
          assert.equal(res.status, 200);
          return ((await res.json()) as { translations: { text: string; score: number }[] }).translations[0];
        }),
      );
      answers.forEach((a, i) => {
        assert.equal(a.text, expected[i].text);
        assert.ok(Math.abs(a.score - expected[i].score) < 1e-4);
      });
      const streamed = await (await post({ texts: src, beam: 3 }, '?stream=1')).text();
      const result = streamed
        .split('\n\n')
        .find((e) => e.startsWith('event: result'))
        ?.split('\n')
        .find((l) => l.startsWith('data: '));
      assert.ok(result, streamed);
      const body = JSON.parse(result.slice(6)) as { translations: { text: string }[] };
      assert.deepEqual(
        body.translations.map((t) => t.text),
        expected.map((t) => t.text),
      );
    } finally {
      await server.close();
    }
  });
});
