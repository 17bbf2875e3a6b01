/**
 * Issue #39 item 8: a sampling temperature below the documented floor (core/decode/sampling.ts
 * MIN_TEMPERATURE) is refused with a 400 naming the field, where 1e-308 used to be answered 200 with the
 * least probable tokens; and a stream its client cuts is cancelled with one info line and one count in
 * `frost_streams_cancelled_total`, where it used to leave neither.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { checkSamplingOptions, MIN_TEMPERATURE, TokenSampler } from '../core/decode/sampling.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { createApp } from '../serve/app.ts';
import { BatcherPool } from '../serve/batcher-pool.ts';
import { HttpError } from '../serve/errors.ts';
import { parseCompleteRequest } from '../serve/lm-schemas.ts';
import { createLogger } from '../serve/logger.ts';
import { ServeMetrics } from '../serve/metrics.ts';
import type { ModelRuntime } from '../serve/model-runtime.ts';
import { ModelRegistry } from '../serve/model-registry.ts';
import { DEFAULT_LIMITS } from '../serve/schemas.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

describe('sampling temperature floor', () => {
  test('below MIN_TEMPERATURE the request is a 400 naming temperature; at the floor it samples', () => {
    for (const temperature of [1e-308, 1e-305, MIN_TEMPERATURE / 2]) {
      assert.throws(
        () => parseCompleteRequest({ text: 'w1', temperature }, DEFAULT_LIMITS, () => 1),
        (err: unknown) =>
          err instanceof HttpError &&
          err.statusCode === 400 &&
          /temperature: must be at least 0\.001/.test(err.message),
        `temperature ${temperature}`,
      );
      assert.throws(() => checkSamplingOptions({ temperature }), /temperature must be 0 \(greedy\) or at least 0\.001/);
    }
    const ok = parseCompleteRequest({ text: 'w1', temperature: MIN_TEMPERATURE }, DEFAULT_LIMITS, () => 1);
    assert.equal(ok.sampling.temperature, MIN_TEMPERATURE);
    // At the floor the draw is the argmax, as greedy's: never the least probable token (what 1e-308 gave).
    const logProbs = Float32Array.from([-3, -0.2, -2.5, -4]);
    const sampler = new TokenSampler({ temperature: MIN_TEMPERATURE, seed: 5 });
    for (let i = 0; i < 20; i++) assert.equal(sampler.pick(logProbs, 0, 4), 1);
  });
});

describe('a stream its client cuts', () => {
  let root: string;
  let http: Server;
  let url: string;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const lines: Record<string, unknown>[] = [];
  const metrics = new ServeMetrics({ processMetrics: false });
  let registry: ModelRegistry;
  let pool: BatcherPool;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'frost-stream-cancel-'));
    const inner = await loadModelDir(await writeTinyModelDir(join(root, 'tiny')), { intraOpNumThreads: 1 });
    // Decoding waits for the gate, so the stream is open and unanswered when the client leaves.
    const runtime: ModelRuntime = {
      card: inner.card,
      release: () => inner.release(),
      async translateEach(texts, options, hooks) {
        await gate;
        return inner.translateEach(texts, options, hooks);
      },
    };
    registry = new ModelRegistry([{ name: runtime.card.name, runtime }]);
    pool = new BatcherPool(registry, {}, metrics);
    const logger = createLogger((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    http = createServer(createApp({ registry, pool, metrics, logger }));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });

  after(async () => {
    open();
    await new Promise((resolve) => http.close(resolve));
    await pool.idle();
    await registry.close();
    await rm(root, { recursive: true, force: true });
  });

  test('is cancelled with one info line and one count in frost_streams_cancelled_total', async () => {
    const client = new AbortController();
    const res = await fetch(`${url}/v1/translate?stream=1`, {
      method: 'POST',
      body: JSON.stringify({ text: 'a b' }),
      headers: { 'content-type': 'application/json', 'x-request-id': 'cut-1' },
      signal: client.signal,
    });
    assert.equal(res.status, 200);
    client.abort();
    const cancelled = () => lines.filter((l) => l.msg === 'client closed the stream; decoding cancelled');
    for (let i = 0; i < 200 && cancelled().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    open();
    await pool.idle();
    assert.deepEqual(
      cancelled().map((l) => [l.level, l.reqId, l.route]),
      [[30, 'cut-1', '/v1/translate']],
    );
    const text = await (await fetch(`${url}/metrics`)).text();
    assert.match(text, /^frost_streams_cancelled_total\{route="\/v1\/translate"\} 1$/m);
    assert.ok(!lines.some((l) => Number(l.level) >= 50), 'nothing at error level');
  });
});
