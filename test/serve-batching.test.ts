/**
 * The server under concurrency: dynamic batching gives the answers of unbatched decoding,
 * backpressure (503) and timeouts (504, and a request that times out while queued is never
 * decoded), `--watch` reloads, and graceful shutdown of the real `frost serve` process.
 *
 * Batching depends on what is queued when a batch starts. To make that independent of machine
 * speed, the tests that count batches decode through a gate: the first batch waits at the gate
 * until the other requests are queued, so what gets merged is decided by arrival order alone.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModelDir } from '../core/runtime/load-node.ts';
import type { Seq2SeqRuntime, Translation } from '../core/runtime/seq2seq.ts';
import { createApp } from '../serve/app.ts';
import type { BatchingOptions } from '../serve/batcher.ts';
import { BatcherPool } from '../serve/batcher-pool.ts';
import { ServeMetrics } from '../serve/metrics.ts';
import { ModelRegistry } from '../serve/model-registry.ts';
import type { ModelRuntime } from '../serve/model-runtime.ts';
import type { RequestLimits } from '../serve/schemas.ts';
import { startServer, type RunningServer, type ServerOptions } from '../serve/server.ts';
import { WorkerRuntime } from '../serve/worker-runtime.ts';
import { startFrostServe } from './helpers/frost-serve.ts';
import { TINY_SOURCE_WORDS, writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;
let modelDir: string;
let direct: Seq2SeqRuntime;
const servers: Array<{ close(): Promise<void> }> = [];

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-serve-batch-'));
  modelDir = await writeTinyModelDir(join(root, 'tiny'));
  direct = await loadModelDir(modelDir, { intraOpNumThreads: 1 });
});

after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await direct?.release();
  await rm(root, { recursive: true, force: true });
});

async function serve(opts: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const server = await startServer({ modelsDir: modelDir, port: 0, intraOpNumThreads: 1, log: () => {}, ...opts });
  servers.push(server);
  return server;
}

interface Answer {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON under test
}

async function translate(server: { url: string }, body: unknown): Promise<Answer> {
  const res = await fetch(`${server.url}/v1/translate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/** Deterministic sentences of 1..14 words over the tiny model's vocabulary. */
function sentences(n: number, seed = 1): string[] {
  let s = seed;
  const next = () => (s = (s * 16807) % 2147483647) / 2147483647;
  return Array.from({ length: n }, () =>
    Array.from(
      { length: 1 + Math.floor(next() * 14) },
      () => TINY_SOURCE_WORDS[Math.floor(next() * TINY_SOURCE_WORDS.length)],
    ).join(' '),
  );
}

/**
 * Same text, tokens and n-best texts; scores equal up to float rounding (padding to a batch's longest input changes
 * summation order).
 */
function assertSameTranslation(
  wire: { text: string; score: number; log_prob: number; n_best?: unknown[] },
  expected: Translation,
  what: string,
): void {
  assert.equal(wire.text, expected.text, what);
  assert.ok(
    Math.abs(wire.score - expected.score) <= 1e-5 * Math.max(1, Math.abs(expected.score)),
    `${what}: score ${wire.score} vs ${expected.score}`,
  );
  assert.ok(
    Math.abs(wire.log_prob - expected.logProb) <= 1e-5 * Math.max(1, Math.abs(expected.logProb)),
    `${what}: log_prob`,
  );
  if (expected.nBest) {
    assert.deepEqual(
      (wire.n_best as Array<{ text: string }>).map((h) => h.text),
      expected.nBest.map((h) => h.text),
      what,
    );
  }
}

async function batchStats(server: { url: string }): Promise<{ batches: number; requests: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const num = (re: RegExp) => Number(text.match(re)?.[1] ?? 0);
  return {
    batches: num(/^frost_batch_requests_count\{model="tiny-en-de"\} (\d+)/m),
    requests: num(/^frost_batch_requests_sum\{model="tiny-en-de"\} (\d+)/m),
  };
}

/**
 * A model runtime whose batches wait at a gate, then decode with `inner`. It records the texts of
 * every batch that got past the gate, and how many of them finished decoding.
 */
function gated(inner: ModelRuntime) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered!: () => void;
  const firstBatch = new Promise<void>((resolve) => (entered = resolve));
  const batches: string[][] = [];
  let decoded = 0;
  const runtime: ModelRuntime = {
    card: inner.card,
    release: () => inner.release(),
    async translateEach(texts, options, hooks) {
      entered();
      await gate;
      batches.push([...texts]);
      const out = await inner.translateEach(texts, options, hooks);
      decoded++;
      return out;
    },
  };
  return { runtime, open, firstBatch, batches, decoded: () => decoded };
}

/** The app over a gated worker-thread runtime of the tiny model. */
async function gatedServer(batching: Partial<BatchingOptions>, limits: Partial<RequestLimits> = {}) {
  const gate = gated(await WorkerRuntime.start(modelDir, { workers: 1, intraOpNumThreads: 1 }));
  const registry = new ModelRegistry([{ name: gate.runtime.card.name, runtime: gate.runtime }]);
  const metrics = new ServeMetrics({ processMetrics: false });
  const pool = new BatcherPool(registry, batching, metrics);
  const http = createServer(createApp({ registry, pool, metrics, limits }));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const server = {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    gate,
    /** Requests waiting in the model's queue (not yet handed to the runtime). */
    queued: () => pool.for(gate.runtime.card.name).depth,
    async close() {
      gate.open();
      await new Promise((resolve) => http.close(resolve));
      await pool.idle();
      await registry.close();
    },
  };
  servers.push(server);
  return server;
}

/** Resolves once `condition` holds, checking every few milliseconds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('dynamic batching', () => {
  test('requests queued together are decoded as one batch per search setting, with the answers of unbatched decoding', async () => {
    const server = await gatedServer({ maxWaitMs: 20, maxBatch: 64, concurrency: 1 });
    const blocker = translate(server, { text: 'a dog' });
    await server.gate.firstBatch;
    const texts = sentences(48);
    const settings = [{}, { beam: 3 }, { beam: 4, n_best: 2, max_len: 6 }];
    const bodies = texts.map((text, i) => ({ text, ...settings[i % settings.length] }));
    const pending = Promise.all(bodies.map((b) => translate(server, b)));
    await until(() => server.queued() === bodies.length);
    server.gate.open();
    const answers = await pending;
    assert.equal((await blocker).status, 200);
    // The blocker, then one batch per settings group, each holding all 16 requests of its group.
    assert.deepEqual(
      server.gate.batches.map((b) => b.length),
      [1, 16, 16, 16],
    );
    const stats = await batchStats(server);
    assert.deepEqual(stats, { batches: 4, requests: bodies.length + 1 });
    for (let i = 0; i < bodies.length; i++) {
      assert.equal(answers[i].status, 200, JSON.stringify(answers[i].body));
      const s = bodies[i] as { beam?: number; n_best?: number; max_len?: number };
      const [expected] = await direct.translate([texts[i]], { beam: s.beam, nBest: s.n_best, maxLen: s.max_len });
      assertSameTranslation(answers[i].body.translations[0], expected, `request ${i} '${texts[i]}'`);
    }
  });

  test('inputs of equal length batch bit-for-bit like unbatched', async () => {
    const server = await gatedServer({ maxWaitMs: 20, concurrency: 1 });
    const blocker = translate(server, { text: 'a dog' });
    await server.gate.firstBatch;
    const texts = sentences(16, 5).map((t) => `${t.split(' ')[0]} dog runs`);
    const pending = Promise.all(texts.map((text) => translate(server, { text, beam: 2 })));
    await until(() => server.queued() === texts.length);
    server.gate.open();
    const answers = await pending;
    assert.equal((await blocker).status, 200);
    assert.deepEqual(
      server.gate.batches.map((b) => b.length),
      [1, 16],
    );
    for (let i = 0; i < texts.length; i++) {
      const [expected] = await direct.translate([texts[i]], { beam: 2 });
      assert.deepEqual(answers[i].body.translations[0], {
        text: expected.text,
        score: expected.score,
        log_prob: expected.logProb,
      });
    }
  });
});

describe('backpressure and limits', () => {
  test('a full queue → 503 FROST_ERR_OVERLOADED with Retry-After; the queued requests are answered', async () => {
    const server = await gatedServer({ maxQueue: 2, concurrency: 1 });
    const blocker = translate(server, { text: 'a dog', beam: 4 });
    await server.gate.firstBatch;
    const queued = [translate(server, { texts: ['a cat', 'a man'] }), translate(server, { text: 'the red ball' })];
    await until(() => server.queued() === 2);
    const refused = await translate(server, { text: 'a blue house' });
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'FROST_ERR_OVERLOADED');
    assert.equal(refused.headers.get('retry-after'), '1');
    server.gate.open();
    assert.deepEqual(
      (await Promise.all([blocker, ...queued])).map((a) => a.status),
      [200, 200, 200],
    );
    assert.ok(!server.gate.batches.flat().includes('a blue house'), 'a refused request is never decoded');
  });

  test('a request that times out while queued → 504 and is dropped before decoding; one timing out mid-decode is decoded and discarded', async () => {
    const server = await gatedServer({ concurrency: 1, maxWaitMs: 0 }, { timeoutMs: 200 });
    const decoding = translate(server, { texts: ['a dog runs', 'the cat sits'] });
    await server.gate.firstBatch;
    const queued = await translate(server, { texts: ['a red ball', 'a blue house', 'the small man'] });
    assert.equal(queued.status, 504, JSON.stringify(queued.body));
    assert.equal(queued.body.code, 'FROST_ERR_TIMEOUT');
    assert.equal(server.queued(), 0, 'the timed-out request left the queue');
    const first = await decoding;
    assert.equal(first.status, 504, 'the request held at the gate timed out too');
    server.gate.open();
    await until(() => server.gate.decoded() === 1);
    // Only the first request reached the decoder; its decode ran to the end and was thrown away.
    assert.deepEqual(server.gate.batches, [['a dog runs', 'the cat sits']]);
    const later = await translate(server, { text: 'a man sits' });
    assert.equal(later.status, 200, JSON.stringify(later.body));
    assert.deepEqual(server.gate.batches, [['a dog runs', 'the cat sits'], ['a man sits']]);
    assert.deepEqual(await batchStats(server), { batches: 2, requests: 2 });
  });

  test('a request over --timeout-ms → 504 FROST_ERR_TIMEOUT', async () => {
    const server = await serve({ limits: { timeoutMs: 1 }, batching: { maxWaitMs: 10 } });
    const a = await translate(server, { texts: sentences(32, 9), beam: 16, max_len: 512 });
    assert.equal(a.status, 504, JSON.stringify(a.body));
    assert.equal(a.body.code, 'FROST_ERR_TIMEOUT');
    assert.match(a.body.message, /1 ms/);
  });
});

describe('--watch', () => {
  test('a corrupt model is refused and the old one keeps serving; a good one replaces it', async () => {
    const dir = await writeTinyModelDir(join(root, 'watched'));
    const reloads: boolean[] = [];
    let notify: (() => void) | undefined;
    const server = await serve({
      modelsDir: dir,
      watch: true,
      onReload: (_name, ok) => {
        reloads.push(ok);
        notify?.();
      },
    });
    const nextReload = () => new Promise<void>((resolve) => (notify = resolve));
    const text = 'a red dog runs on the house';
    const before = await translate(server, { text });
    assert.equal(before.status, 200);
    const first = server.registry.get(undefined).runtime;
    assert.ok(first instanceof WorkerRuntime);

    // Garbage of the recorded size passes the size check and must fail in ONNX Runtime.
    const good = await readFile(join(dir, 'decoder.onnx'));
    let reloaded = nextReload();
    await writeFile(join(dir, 'decoder.onnx'), Buffer.alloc(good.length, 7));
    await reloaded;
    assert.deepEqual(reloads, [false]);
    const during = await translate(server, { text });
    assert.equal(during.status, 200);
    assert.deepEqual(during.body.translations, before.body.translations);

    // A different, valid model (other weights, same name) takes over.
    const other = await writeTinyModelDir(join(root, 'other'), { seed: 8 });
    reloaded = nextReload();
    for (const f of ['decoder.onnx', 'encoder.onnx', 'model-card.json']) await copyFile(join(other, f), join(dir, f));
    await reloaded;
    while (reloads.length < 1 || !reloads.at(-1)) await nextReload();
    const fresh = await loadModelDir(other, { intraOpNumThreads: 1 });
    const [expected] = await fresh.translate([text]);
    await fresh.release();
    const afterReload = await translate(server, { text });
    assert.equal(afterReload.status, 200);
    assert.equal(afterReload.body.translations[0].text, expected.text);
    // The new version runs in new threads; the old threads are released once idle.
    const second = server.registry.get(undefined).runtime;
    assert.ok(second instanceof WorkerRuntime && second !== first && second.threads.length === 1);
    await until(() => first.threads.length === 0);
  });
});

describe('frost serve process', () => {
  test('SIGTERM during load: every accepted request is answered 200, exit code 0', async () => {
    const {
      child,
      url,
      log: lines,
    } = await startFrostServe(['--models', modelDir, '--port', '0', '--threads', '1', '--max-wait-ms', '2']);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

    const N = 24;
    const requests = sentences(N, 11).map((text) =>
      fetch(`${url}/v1/translate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ texts: Array.from({ length: 16 }, () => text), beam: 6, max_len: 120 }),
      }).then(
        async (res) => ({ status: res.status, body: await res.text() }),
        (err: Error) => ({ status: 0, body: String((err.cause as Error)?.message ?? err) }),
      ),
    );
    // Stop the server once it has received every request (answered or in flight), while most decode.
    for (;;) {
      const metrics = await (await fetch(`${url}/metrics`)).text();
      const num = (re: RegExp) => Number(metrics.match(re)?.[1] ?? 0);
      const received =
        num(/^frost_requests_in_flight (\d+)/m) -
        1 +
        num(/^frost_request_duration_seconds_count\{method="POST",route="\/v1\/translate",status="200"\} (\d+)/m);
      if (received >= N) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    child.kill('SIGTERM');
    const answers = await Promise.all(requests);
    assert.deepEqual(
      answers.map((a) => a.status),
      answers.map(() => 200),
      answers.find((a) => a.status !== 200)?.body,
    );
    assert.equal(await exited, 0, lines.join('\n'));
    const stopped = lines
      .map((l) => JSON.parse(l) as { msg: string; inFlight?: number; drained?: boolean })
      .find((l) => l.msg === 'frost serve stopped');
    assert.ok(stopped?.drained, lines.join('\n'));
    assert.ok(
      (stopped?.inFlight ?? 0) > 0,
      `SIGTERM arrived while requests were in flight: ${JSON.stringify(stopped)}`,
    );
  });
});
