/**
 * A Transformer in the browser: its decoder state is a key/value cache (the card's append caches: buffers the
 * runtime owns, of which the first `cache_len` positions are filled, the step returning only its new position),
 * and beam search reorders its rows. This checks, in headless Chromium with the page's onnxruntime-web build, that:
 *
 * - the page (through its UI) loads the model from `frost serve` and translates word for word as
 *   the server does, with beam search;
 * - three decoder steps from empty caches, each position written into a buffer of capacity 3, give the
 *   log-probabilities that onnxruntime-node gives with the runtime's growing buffers (capacity 8), within
 *   1e-4 · max(1, |value|).
 *
 * Skipped, with the reason, where Chromium is missing.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { appendPosition } from '../core/runtime/append-cache.ts';
import { ort } from '../core/runtime/ort-node.ts';
import type { HostTensor } from '../core/runtime/row-state.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { OrtWeb } from '../core/runtime/ort-web.ts';
import { initBackend } from '../train/backend/select.ts';
import {
  assertPageTranslatesAsServer,
  browserSkipReason,
  openPage,
  servedPageFixture,
  toWire,
  type WireTensor,
} from './helpers/browser.ts';
import { encodeFixedSources } from './helpers/decoder-step.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { cachedToyModel } from './helpers/toy-fixtures.ts';

const MODEL = 'toy-transformer';
const TOLERANCE = 1e-4;
const STEPS = 3;

describe('a Transformer with a key/value cache, in Chromium', { skip: browserSkipReason(), timeout: 180_000 }, () => {
  let modelDir: string;
  let card: ModelCard;
  const web = servedPageFixture(
    'frost-web-transformer-',
    async (root) => {
      // Should the cached run or its export need building, tfjs runs on wasm, as it trained here before.
      await initBackend({ prefer: 'wasm', quiet: true });
      const toy = await cachedToyModel(
        {
          head: 'tied',
          corpus: { seed: 1, train: 600, val: 8, test: 8 },
          config: { arch: 'transformer', epochs: 3, optim: { learningRate: 3e-3 } },
        },
        { name: MODEL },
      );
      ({ modelDir, card } = toy);
      // Copies: the cached folders are shared, and the page's fixture serves its own.
      await copyFixture(toy.modelsDir, join(root, 'models'));
      await copyFixture(toy.dataDir, join(root, 'toy'));
    },
    { ortApi: true },
  );

  test('the page loads it through its UI and translates, with beam search, as POST /v1/translate does', async () => {
    assert.equal(card.arch, 'transformer');
    assert.ok(card.graphs.decoder.state.includes('self_k_0'), card.graphs.decoder.state.join(', '));
    await assertPageTranslatesAsServer(web, MODEL);
  });

  test(`${STEPS} cached decoder steps from the empty caches: the browser equals onnxruntime-node`, async () => {
    const dec = card.graphs.decoder;
    const encoded = await encodeFixedSources(join(modelDir, card.graphs.encoder.file), card.source!.tokens.length);
    const decoder = await ort.InferenceSession.create(join(modelDir, dec.file), { graphOptimizationLevel: 'all' });
    const tokens = [
      [card.specials.bos, card.specials.bos],
      [5, 6],
      [7, 8],
    ];
    // The export's step returns only each position's keys and values (the card's append caches).
    const cache = dec.cache!;
    assert.equal(cache.kind, 'append');
    // onnxruntime-node: the reference log-probabilities of each step, its caches grown as the runtime grows them.
    const expected: Float32Array[] = [];
    let feeds: Record<string, ort.Tensor> = { ...encoded };
    for (const [t, prev] of tokens.entries()) {
      const out = await decoder.run({
        ...feeds,
        [dec.token]: new ort.Tensor('int64', BigInt64Array.from(prev, BigInt), [2]),
        [cache.length]: new ort.Tensor('int64', [BigInt(t)], []),
      });
      expected.push(out[dec.logProbs]!.data as Float32Array);
      const next = { ...feeds };
      for (const name of dec.state) {
        const fresh = out[cache.states[name]!] as HostTensor;
        next[name] = appendPosition(ort, feeds[name] as HostTensor, t, fresh, cache.axis, false) as ort.Tensor;
      }
      feeds = next;
    }
    const memory: Record<string, WireTensor> = {};
    for (const name of [...dec.state, ...dec.memory]) memory[name] = toWire(encoded[name]!);
    assert.equal(memory.self_k_0!.dims[2], 0, 'the encoder returns empty caches');
    await decoder.release();

    const { page, serverUrl } = web;
    await openPage(page, serverUrl);
    const got = await page.evaluate(
      async ({ apiUrl, decoderUrl, memory, tokens, spec }) => {
        const ortWeb = (await import(apiUrl)) as OrtWeb;
        ortWeb.env.wasm.wasmPaths = new URL('ort/', document.baseURI).href;
        ortWeb.env.wasm.numThreads = 1;
        const bytes = new Uint8Array(await (await fetch(decoderUrl)).arrayBuffer());
        const session = await ortWeb.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
        const feeds: Record<string, InstanceType<OrtWeb['Tensor']>> = {};
        for (const [name, t] of Object.entries(memory))
          feeds[name] = new ortWeb.Tensor('float32', Float32Array.from(t.data), t.dims);
        // Here the caches have their whole capacity from the start (one position per step), written in place.
        const capacity = tokens.length;
        for (const name of spec.state) {
          const [rows, heads, , dk] = memory[name]!.dims as [number, number, number, number];
          feeds[name] = new ortWeb.Tensor('float32', new Float32Array(rows * heads * capacity * dk), [
            rows,
            heads,
            capacity,
            dk,
          ]);
        }
        const steps: { logProbs: number[]; newPositions: number }[] = [];
        for (const [t, prev] of tokens.entries()) {
          const token = new ortWeb.Tensor('int64', BigInt64Array.from(prev.map((x) => BigInt(x))), [prev.length]);
          const length = new ortWeb.Tensor('int64', BigInt64Array.from([BigInt(t)]), []);
          const out = await session.run({ ...feeds, [spec.token]: token, [spec.length]: length });
          steps.push({
            logProbs: Array.from(out[spec.logProbs]!.data as Float32Array),
            newPositions: out[spec.outputs[spec.state[0]!]!]!.dims[2]!,
          });
          for (const name of spec.state) {
            const fresh = out[spec.outputs[name]!]!.data as Float32Array;
            const buffer = feeds[name]!.data as Float32Array;
            const dk = feeds[name]!.dims[3]!;
            for (let o = 0; o < fresh.length / dk; o++)
              buffer.set(fresh.subarray(o * dk, (o + 1) * dk), (o * capacity + t) * dk);
          }
        }
        await session.release();
        return steps;
      },
      {
        apiUrl: web.apiUrl,
        decoderUrl: `${serverUrl}/v1/models/${MODEL}/files/${dec.file}`,
        memory,
        tokens,
        spec: {
          token: dec.token,
          logProbs: dec.logProbs,
          state: dec.state,
          length: cache.length,
          outputs: cache.states,
        },
      },
    );
    assert.equal(got.length, STEPS);
    got.forEach((step, t) => {
      assert.equal(step.newPositions, 1);
      let worst = 0;
      for (let i = 0; i < expected[t]!.length; i++) {
        const want = expected[t]![i]!;
        worst = Math.max(worst, Math.abs(step.logProbs[i]! - want) / Math.max(1, Math.abs(want)));
      }
      assert.ok(worst <= TOLERANCE, `step ${t}: |Δ|/max(1,|v|) = ${worst}`);
    });
  });
});
