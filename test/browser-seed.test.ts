/**
 * A frozen output head exported from its seed, run in a real browser. A `fixed-uniform` head is
 * exported (by default) as a seed plus an integer subgraph that onnxruntime regenerates the matrix
 * with when it creates the session; this checks that onnxruntime-web in headless Chromium rebuilds
 * the same matrix as onnxruntime-node does on the server:
 *
 * - the page (through its UI) loads the model from `frost serve` and translates as the server does;
 * - one decoder step on fixed inputs, run in the page's context with the ONNX Runtime build the page
 *   uses (ort.wasm.min.mjs, its wasm from the server's `/ort/`), gives the log-probabilities that
 *   onnxruntime-node gives, within 1e-4 · max(1, |value|), with the regeneration folded at session
 *   creation (the page's setting) and with it run step by step (no graph optimisation).
 *
 * Skipped, with the reason, where Chromium is missing.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ort } from '../core/runtime/ort-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { OrtWeb } from '../core/runtime/ort-web.ts';
import { readGraphInfo } from '../export/inspect-graph.ts';
import { resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import {
  browserSkipReason,
  loadModelInPage,
  openPage,
  servedPageFixture,
  toWire,
  translateInPage,
  type WireTensor,
} from './helpers/browser.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { encodeFixedSources } from './helpers/decoder-step.ts';
import { cachedToyExport } from './helpers/toy-exports.ts';
import { cachedToyModel } from './helpers/toy-fixtures.ts';
import { RNN_ATTN_FIXED_UNIFORM_SHORT } from './helpers/toy-specs.ts';

const MODEL = 'seeded-fixed-uniform';
/** The same run exported as int8-compute: its encoder and decoder both have values to materialise. */
const MODEL_INT8 = 'seeded-fixed-uniform-int8c';
const TOLERANCE = 1e-4;

function toNode(w: WireTensor): ort.Tensor {
  return w.type === 'int64'
    ? new ort.Tensor('int64', BigInt64Array.from(w.data, BigInt), w.dims)
    : new ort.Tensor('float32', Float32Array.from(w.data), w.dims);
}

describe('a head regenerated from its seed, in Chromium', { skip: browserSkipReason(), timeout: 120_000 }, () => {
  let modelDir: string;
  let card: ModelCard;
  const web = servedPageFixture(
    'frost-web-seed-',
    async (root) => {
      // Should the cached run or its exports need building, tfjs runs on wasm, as it trained here before.
      await initBackend({ prefer: 'wasm', quiet: true });
      // The default export: the head's matrix is not in the file, only its seed.
      const toy = await cachedToyModel(RNN_ATTN_FIXED_UNIFORM_SHORT, { name: MODEL });
      ({ modelDir, card } = toy);
      const int8 = await cachedToyExport(RNN_ATTN_FIXED_UNIFORM_SHORT, {
        checkpoint: 'last',
        name: MODEL_INT8,
        precision: 'int8-compute',
        precisionSentences: 8,
      });
      // The server serves one folder of models; the cached exports are two folders, shared.
      await copyFixture(modelDir, join(root, 'models', MODEL));
      await copyFixture(int8.outDir, join(root, 'models', MODEL_INT8));
      await copyFixture(toy.dataDir, join(root, 'toy'));
    },
    { ortApi: true },
  );

  test('the export stores a seed, not the matrix', async () => {
    const V = card.target.tokens.length;
    assert.equal(card.head.name, 'fixed-uniform');
    assert.equal(card.params.generated, V * (resolveArchConfig('rnn-attn', 'tiny') as { output: number }).output);
    // The head's tensors in the decoder file: the seed and a few constants, not |V| x d floats.
    const { initializers } = readGraphInfo(await readFile(join(modelDir, card.graphs.decoder.file)));
    const headBytes = initializers.filter((i) => i.name.startsWith('head')).reduce((n, i) => n + i.bytes, 0);
    assert.ok(headBytes < 1024, `the head stores ${headBytes} bytes`);
  });

  /** Loads the model through the page's UI and checks its translations against the server's. */
  async function loadAndCompare(model = MODEL): Promise<void> {
    const { page } = web;
    await openPage(page, web.serverUrl);
    await loadModelInPage(page, model);
    assert.match((await page.textContent(`#models tbody tr[data-model="${model}"] td.frozen`)) ?? '', /regenerated/);

    const sentences = (await readFile(join(web.root, 'toy', 'test.src'), 'utf8')).trim().split('\n').slice(0, 3);
    const rows = await translateInPage(page, sentences, 3, true);
    rows.forEach((row, i) => assert.equal(row.browser, row.server, `'${sentences[i]}'`));
  }

  test('the page loads it through its UI and translates as POST /v1/translate does', async () => {
    await loadAndCompare();
  });

  test('an int8-compute export (encoder and decoder both materialised in the page) loads and translates as the server does', async () => {
    // The two materialisations once ran at the same time in one wasm instance, which failed with
    // 'RuntimeError: null function' (clients/web/src/load-model.ts runs them one after the other).
    await loadAndCompare(MODEL_INT8);
  });

  test('the first load stores the graph with its matrix in Cache Storage; a warm load opens that and translates the same', async () => {
    const entries = async () =>
      web.page.evaluate(async () => {
        const cache = await caches.open('frost-files-v1');
        // No named function in here: tsx's keepNames would wrap it in a helper the page lacks.
        const keys = await cache.keys();
        const bodies = await Promise.all(keys.map(async (r) => (await cache.match(r))!.arrayBuffer()));
        const sizes = bodies.map((b) => b.byteLength);
        return keys.map((r, i) => ({ url: r.url, bytes: sizes[i]! }));
      });
    const before = await entries();
    const file = card.graphs.decoder.file;
    const stored = before.find((e) => e.url.endsWith(`/${file}?frost-materialised`));
    const download = before.find((e) => e.url.endsWith(`/${file}`));
    assert.ok(stored && download, before.map((e) => e.url).join(', '));
    // The download stays the seed; the page's own copy holds the matrix.
    assert.equal(download.bytes, card.files[file]!.bytes);
    assert.ok(stored.bytes > download.bytes + card.params.generated * 4 * 0.9, `${stored.bytes} vs ${download.bytes}`);
    await loadAndCompare();
    assert.deepEqual((await entries()).map((e) => e.url).sort(), before.map((e) => e.url).sort());
  });

  test('one decoder step: log-probabilities in the browser equal onnxruntime-node’s', async () => {
    const dec = card.graphs.decoder;
    // Fixed inputs: two source sentences of different lengths through the encoder (in Node), then
    // one step from <s> and from a word. Both runtimes get exactly these tensors.
    const encoded = await encodeFixedSources(join(modelDir, card.graphs.encoder.file), card.source!.tokens.length);
    const decoder = await ort.InferenceSession.create(join(modelDir, dec.file), { graphOptimizationLevel: 'all' });
    const feeds: Record<string, WireTensor> = {};
    for (const name of decoder.inputNames) {
      if (name === dec.token) feeds[name] = { type: 'int64', dims: [2], data: [card.specials.bos, 5] };
      else if (encoded[name]) feeds[name] = toWire(encoded[name]!);
      else assert.fail(`decoder input '${name}' is neither the token nor an encoder output`);
    }
    const nodeFeeds = Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, toNode(v)]));
    const expected = (await decoder.run(nodeFeeds))[dec.logProbs]!;
    await decoder.release();
    const V = card.target.tokens.length;
    assert.deepEqual(expected.dims, [2, V]);

    const { page, serverUrl } = web;
    await openPage(page, serverUrl);
    const inBrowser = await page.evaluate(
      async ({ apiUrl, decoderUrl, feeds, output }) => {
        const ortWeb = (await import(apiUrl)) as OrtWeb;
        // As the page sets it up (clients/web/src/ort-loader.ts): wasm from the server, threads when isolated.
        ortWeb.env.wasm.wasmPaths = new URL('ort/', document.baseURI).href;
        ortWeb.env.wasm.numThreads = crossOriginIsolated
          ? Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1))
          : 1;
        const bytes = new Uint8Array(await (await fetch(decoderUrl)).arrayBuffer());
        const tensors: Record<string, InstanceType<OrtWeb['Tensor']>> = {};
        for (const [name, t] of Object.entries(feeds)) {
          tensors[name] =
            t.type === 'int64'
              ? new ortWeb.Tensor('int64', BigInt64Array.from(t.data.map((x) => BigInt(x))), t.dims)
              : new ortWeb.Tensor('float32', Float32Array.from(t.data), t.dims);
        }
        const out: Record<string, { dims: number[]; data: number[] }> = {};
        for (const level of ['all', 'disabled'] as const) {
          const session = await ortWeb.InferenceSession.create(bytes, {
            executionProviders: ['wasm'],
            graphOptimizationLevel: level,
          });
          const result = (await session.run(tensors))[output]!;
          out[level] = { dims: [...result.dims], data: Array.from(result.data as Float32Array) };
          await session.release();
        }
        return { out, version: ortWeb.env.versions.web, threads: ortWeb.env.wasm.numThreads };
      },
      {
        apiUrl: web.apiUrl,
        decoderUrl: `${serverUrl}/v1/models/${MODEL}/files/${dec.file}`,
        feeds,
        output: dec.logProbs,
      },
    );

    const want = expected.data as Float32Array;
    for (const [level, got] of Object.entries(inBrowser.out)) {
      assert.deepEqual(got.dims, [2, V], level);
      let worst = 0;
      let at = -1;
      for (let i = 0; i < want.length; i++) {
        const scaled = Math.abs(got.data[i]! - want[i]!) / Math.max(1, Math.abs(want[i]!));
        if (!(scaled <= worst)) {
          worst = scaled;
          at = i;
        }
      }
      assert.ok(
        worst <= TOLERANCE,
        `optimisation '${level}': |Δ|/max(1,|v|) = ${worst} at ${at} (browser ${got.data[at]}, node ${want[at]})`,
      );
      // A real distribution, not a constant: the step ranks the words.
      assert.ok(Math.max(...got.data) > Math.min(...got.data) + 1e-3, `${level}: flat log-probabilities`);
    }
  });
});
