/**
 * The server under concurrency: dynamic batching gives the answers of unbatched decoding, /healthz
 * stays responsive under load, backpressure (503) and timeouts (504), `--watch` reloads, and
 * graceful shutdown of the real `frost serve` process.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModelDir } from '../core/runtime/load-node.ts';
import type { Seq2SeqRuntime, Translation } from '../core/runtime/seq2seq.ts';
import { startServer, type RunningServer, type ServerOptions } from '../serve/server.ts';
import { TINY_SOURCE_WORDS, writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;
let modelDir: string;
let direct: Seq2SeqRuntime;
const servers: RunningServer[] = [];

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

async function translate(server: RunningServer, body: unknown): Promise<Answer> {
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
    Array.from({ length: 1 + Math.floor(next() * 14) }, () => TINY_SOURCE_WORDS[Math.floor(next() * TINY_SOURCE_WORDS.length)]).join(' '),
  );
}

/** Same text, tokens and n-best texts; scores equal up to float rounding (padding to a batch's longest input changes summation order). */
function assertSameTranslation(wire: { text: string; score: number; log_prob: number; n_best?: unknown[] }, expected: Translation, what: string): void {
  assert.equal(wire.text, expected.text, what);
  assert.ok(Math.abs(wire.score - expected.score) <= 1e-5 * Math.max(1, Math.abs(expected.score)), `${what}: score ${wire.score} vs ${expected.score}`);
  assert.ok(Math.abs(wire.log_prob - expected.logProb) <= 1e-5 * Math.max(1, Math.abs(expected.logProb)), `${what}: log_prob`);
  if (expected.nBest) {
    assert.deepEqual((wire.n_best as Array<{ text: string }>).map((h) => h.text), expected.nBest.map((h) => h.text), what);
  }
}

async function batchStats(server: RunningServer): Promise<{ batches: number; requests: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const num = (re: RegExp) => Number(text.match(re)?.[1] ?? 0);
  return { batches: num(/^frost_batch_requests_count\{model="tiny-en-de"\} (\d+)/m), requests: num(/^frost_batch_requests_sum\{model="tiny-en-de"\} (\d+)/m) };
}

describe('dynamic batching', () => {
  test('many concurrent requests, batched, answer as each decoded alone', async () => {
    const server = await serve({ batching: { maxWaitMs: 20, maxBatch: 64 } });
    const texts = sentences(48);
    const settings = [{}, { beam: 3 }, { beam: 4, n_best: 2, max_len: 6 }];
    const bodies = texts.map((text, i) => ({ text, ...settings[i % settings.length] }));
    const answers = await Promise.all(bodies.map((b) => translate(server, b)));
    const stats = await batchStats(server);
    assert.equal(stats.requests, bodies.length);
    assert.ok(stats.batches < bodies.length / 3, `${stats.batches} batches for ${bodies.length} requests: requests were not merged`);
    for (let i = 0; i < bodies.length; i++) {
      assert.equal(answers[i].status, 200, JSON.stringify(answers[i].body));
      const s = bodies[i] as { beam?: number; n_best?: number; max_len?: number };
      const [expected] = await direct.translate([texts[i]], { beam: s.beam, nBest: s.n_best, maxLen: s.max_len });
      assertSameTranslation(answers[i].body.translations[0], expected, `request ${i} '${texts[i]}'`);
    }
  });

  test('inputs of equal length batch bit-for-bit like unbatched', async () => {
    const server = await serve({ batching: { maxWaitMs: 20 } });
    const texts = sentences(16, 5).map((t) => `${t.split(' ')[0]} dog runs`);
    const answers = await Promise.all(texts.map((text) => translate(server, { text, beam: 2 })));
    for (let i = 0; i < texts.length; i++) {
      const [expected] = await direct.translate([texts[i]], { beam: 2 });
      assert.deepEqual(answers[i].body.translations[0], { text: expected.text, score: expected.score, log_prob: expected.logProb });
    }
  });

  test('/healthz stays responsive during a heavy translate load', async () => {
    const server = await serve();
    let stop = false;
    const load = Array.from({ length: 16 }, async () => {
      let n = 0;
      while (!stop) {
        const a = await translate(server, { texts: sentences(16, ++n), beam: 4, max_len: 60 });
        assert.equal(a.status, 200);
      }
    });
    const latencies: number[] = [];
    const until = performance.now() + 2500;
    await new Promise((r) => setTimeout(r, 200));
    while (performance.now() < until) {
      const t0 = performance.now();
      const res = await fetch(`${server.url}/healthz`);
      await res.arrayBuffer();
      latencies.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 5));
    }
    stop = true;
    await Promise.all(load);
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)];
    const stats = await batchStats(server);
    assert.ok(stats.requests > 20, `load ran: ${stats.requests} requests`);
    assert.ok(p99 < 100, `healthz p99 ${p99.toFixed(1)} ms over ${latencies.length} probes (median ${latencies[latencies.length >> 1].toFixed(1)} ms)`);
  });
});

describe('backpressure and limits', () => {
  test('a full queue → 503 FROST_ERR_OVERLOADED with Retry-After; the rest are answered', async () => {
    const server = await serve({ batching: { maxQueue: 1, maxWaitMs: 30, concurrency: 1, maxBatch: 4 } });
    const answers = await Promise.all(sentences(12, 3).map((text) => translate(server, { texts: [text, text], beam: 4 })));
    const codes = answers.map((a) => a.status);
    assert.ok(codes.every((c) => c === 200 || c === 503), codes.join(','));
    const overloaded = answers.filter((a) => a.status === 503);
    assert.ok(overloaded.length >= 1 && overloaded.length < answers.length, codes.join(','));
    for (const a of overloaded) {
      assert.equal(a.body.code, 'FROST_ERR_OVERLOADED');
      assert.equal(a.headers.get('retry-after'), '1');
    }
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
  });
});

describe('frost serve process', () => {
  test('SIGTERM during load: every accepted request is answered 200, exit code 0', async () => {
    const cli = join(import.meta.dirname, '..', 'bin', 'frost.js');
    const child = spawn(process.execPath, [cli, 'serve', '--models', modelDir, '--port', '0', '--threads', '1', '--max-wait-ms', '2'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const lines: string[] = [];
    const url = await new Promise<string>((resolve, reject) => {
      let buf = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => {
        buf += chunk;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          lines.push(line);
          try {
            const rec = JSON.parse(line) as { msg?: string; url?: string };
            if (rec.msg === 'frost serve listening' && rec.url) resolve(rec.url);
          } catch {
            // not JSON: an early failure message, kept in `lines`
          }
        }
      });
      child.once('exit', (code) => reject(new Error(`frost serve exited with ${code}: ${lines.join('\n')}`)));
    });
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
      const received = num(/^frost_requests_in_flight (\d+)/m) - 1 + num(/^frost_request_duration_seconds_count\{method="POST",route="\/v1\/translate",status="200"\} (\d+)/m);
      if (received >= N) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    child.kill('SIGTERM');
    const answers = await Promise.all(requests);
    assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200), answers.find((a) => a.status !== 200)?.body);
    assert.equal(await exited, 0, lines.join('\n'));
    const stopped = lines.map((l) => JSON.parse(l) as { msg: string; inFlight?: number; drained?: boolean }).find((l) => l.msg === 'frost serve stopped');
    assert.ok(stopped?.drained, lines.join('\n'));
    assert.ok((stopped?.inFlight ?? 0) > 0, `SIGTERM arrived while requests were in flight: ${JSON.stringify(stopped)}`);
  });
});
