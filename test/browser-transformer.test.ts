/**
 * A Transformer in the browser: its decoder state is a key/value cache whose length axis starts at
 * zero (the encoder returns empty caches) and grows by one each step, and beam search reorders its
 * rows. This checks, in headless Chromium with the page's onnxruntime-web build, that:
 *
 * - the page (through its UI) loads the model from `frost serve` and translates word for word as
 *   the server does, with beam search;
 * - three decoder steps from the encoder's empty caches, each fed the previous step's caches, give
 *   the log-probabilities and caches that onnxruntime-node gives, within 1e-4 · max(1, |value|).
 *
 * Skipped, with the reason, where Chromium is missing.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as ort from 'onnxruntime-node';
import type { Page } from 'playwright-core';
import { ortDistDir } from '../clients/web/build/ort-files.ts';
import { webClient } from '../clients/web/build/web-client.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import { exportRun } from '../export/export-run.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { initBackend } from '../train/backend/select.ts';
import { browserSkipReason, launchBrowser, settle, type TestBrowser } from './helpers/browser.ts';
import { trainToyRun } from './helpers/toy-run.ts';

const MODEL = 'toy-transformer';
const ORT_API_PATH = '/__test__/ort.wasm.min.mjs';
const TOLERANCE = 1e-4;
const STEPS = 3;

interface WireTensor {
  type: 'float32' | 'int64';
  dims: number[];
  data: number[];
}

function toWire(t: ort.Tensor): WireTensor {
  if (t.type !== 'float32' && t.type !== 'int64') throw new Error(`unexpected ${t.type} tensor`);
  const data = t.type === 'int64' ? Array.from(t.data as BigInt64Array, Number) : Array.from(t.data as Float32Array);
  return { type: t.type, dims: [...t.dims], data };
}

describe('a Transformer with a key/value cache, in Chromium', { skip: browserSkipReason(), timeout: 180_000 }, () => {
  let root: string;
  let modelDir: string;
  let card: ModelCard;
  let server: RunningServer;
  let browser: TestBrowser;
  let page: Page;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'frost-web-transformer-'));
    await initBackend({ prefer: 'wasm', quiet: true });
    const { runDir } = await trainToyRun(root, {
      head: 'tied',
      corpus: { seed: 1, train: 600, val: 8, test: 8 },
      config: { arch: 'transformer', epochs: 3, optim: { learningRate: 3e-3 } },
    });
    modelDir = join(root, 'models', MODEL);
    ({ card } = await exportRun(runDir, modelDir, { checkpoint: 'last', quiet: true, name: MODEL }));
    server = await startServer({
      modelsDir: join(root, 'models'),
      port: 0,
      host: '127.0.0.1',
      intraOpNumThreads: 1,
      web: webClient(),
      log: () => {},
    });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    const api = await readFile(join(ortDistDir(), 'ort.wasm.min.mjs'));
    await page.route(`${server.url}${ORT_API_PATH}`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/javascript; charset=utf-8', body: api }),
    );
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  test('the page loads it through its UI and translates, with beam search, as POST /v1/translate does', async () => {
    assert.equal(card.arch, 'transformer');
    assert.ok(card.graphs.decoder.state.includes('self_k_0'), card.graphs.decoder.state.join(', '));
    await page.goto(server.url);
    await page.waitForSelector('body[data-state="idle"]');
    await page.getByLabel('Model on this server').selectOption(MODEL);
    await page.getByLabel('Run on').selectOption('wasm');
    await page.getByRole('button', { name: 'Load model' }).click();
    await settle(page);
    const sentences = (await readFile(join(root, 'toy', 'test.src'), 'utf8')).trim().split('\n').slice(0, 4);
    await page.getByLabel('Text, one sentence per line').fill(sentences.join('\n'));
    await page.getByLabel('Beam width').fill('3');
    await page.getByRole('switch', { name: /Compare with the server/ }).check();
    await page.getByRole('button', { name: 'Translate' }).click();
    await settle(page);
    const state = await page.getAttribute('body', 'data-state');
    assert.equal(state, 'ready', `the page is '${state}': ${await page.textContent('#status')}`);
    const rows = page.locator('#results tbody tr');
    assert.equal(await rows.count(), sentences.length);
    let words = 0;
    for (let i = 0; i < sentences.length; i++) {
      const inBrowser = await rows.nth(i).locator('td.browser-text').getAttribute('data-text');
      const onServer = await rows.nth(i).locator('td.server-text').getAttribute('data-text');
      assert.ok(inBrowser !== null, `no browser translation of '${sentences[i]}'`);
      assert.equal(inBrowser, onServer, `'${sentences[i]}'`);
      words += inBrowser.split(' ').filter(Boolean).length;
    }
    assert.ok(words > 0, 'every translation is empty: nothing was compared');
  });

  test(`${STEPS} cached decoder steps from the empty caches: the browser equals onnxruntime-node`, async () => {
    const dec = card.graphs.decoder;
    const encoder = await ort.InferenceSession.create(join(modelDir, card.graphs.encoder.file));
    const decoder = await ort.InferenceSession.create(join(modelDir, dec.file), { graphOptimizationLevel: 'all' });
    const S = 5;
    const ids = [4, 5, 6, 7, 8, 9, 10, 11, 0, 0].map((i) => Math.min(i, card.source!.tokens.length - 1));
    const encoded = await encoder.run({
      src_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [2, S]),
      src_lengths: new ort.Tensor('int64', BigInt64Array.from([5, 3], BigInt), [2]),
    });
    const tokens = [
      [card.specials.bos, card.specials.bos],
      [5, 6],
      [7, 8],
    ];
    // onnxruntime-node: the reference log-probabilities of each step.
    const expected: Float32Array[] = [];
    let feeds: Record<string, ort.Tensor> = { ...encoded };
    for (const prev of tokens) {
      const out = await decoder.run({
        ...feeds,
        [dec.token]: new ort.Tensor('int64', BigInt64Array.from(prev, BigInt), [2]),
      });
      expected.push(out[dec.logProbs]!.data as Float32Array);
      const next = { ...feeds };
      for (const name of dec.state) next[name] = out[`next_${name}`]!;
      feeds = next;
    }
    const memory: Record<string, WireTensor> = {};
    for (const name of [...dec.state, ...dec.memory]) memory[name] = toWire(encoded[name]!);
    assert.equal(memory.self_k_0!.dims[2], 0, 'the encoder returns empty caches');
    await encoder.release();
    await decoder.release();

    await page.goto(server.url);
    await page.waitForSelector('body[data-state="idle"]');
    const got = await page.evaluate(
      async ({ apiUrl, decoderUrl, memory, tokens, spec }) => {
        type OrtWeb = typeof import('onnxruntime-web');
        const ortWeb = (await import(apiUrl)) as OrtWeb;
        ortWeb.env.wasm.wasmPaths = new URL('ort/', document.baseURI).href;
        ortWeb.env.wasm.numThreads = 1;
        const bytes = new Uint8Array(await (await fetch(decoderUrl)).arrayBuffer());
        const session = await ortWeb.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
        let feeds: Record<string, InstanceType<OrtWeb['Tensor']>> = {};
        for (const [name, t] of Object.entries(memory))
          feeds[name] = new ortWeb.Tensor('float32', Float32Array.from(t.data), t.dims);
        const steps: { logProbs: number[]; cacheLength: number }[] = [];
        for (const prev of tokens) {
          const token = new ortWeb.Tensor('int64', BigInt64Array.from(prev.map((x) => BigInt(x))), [prev.length]);
          const out = await session.run({ ...feeds, [spec.token]: token });
          steps.push({
            logProbs: Array.from(out[spec.logProbs]!.data as Float32Array),
            cacheLength: out[`next_${spec.state[0]}`]!.dims[2]!,
          });
          const next = { ...feeds };
          for (const name of spec.state) next[name] = out[`next_${name}`]!;
          feeds = next;
        }
        await session.release();
        return steps;
      },
      {
        apiUrl: `${server.url}${ORT_API_PATH}`,
        decoderUrl: `${server.url}/v1/models/${MODEL}/files/${dec.file}`,
        memory,
        tokens,
        spec: { token: dec.token, logProbs: dec.logProbs, state: dec.state },
      },
    );
    assert.equal(got.length, STEPS);
    got.forEach((step, t) => {
      assert.equal(step.cacheLength, t + 1);
      let worst = 0;
      for (let i = 0; i < expected[t]!.length; i++) {
        const want = expected[t]![i]!;
        worst = Math.max(worst, Math.abs(step.logProbs[i]! - want) / Math.max(1, Math.abs(want)));
      }
      assert.ok(worst <= TOLERANCE, `step ${t}: |Δ|/max(1,|v|) = ${worst}`);
    });
  });
});
