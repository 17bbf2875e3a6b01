/**
 * Where a request's time goes at c=1, every way interleaved in random order in one process, so the machine's
 * load touches them alike: in-process `translate`, the decode thread without HTTP (`WorkerRuntime`), the
 * server's own `timing.total_ms`, `POST /v1/translate` from a node:http keep-alive client and from `fetch`, and
 * a bare `GET /healthz` both ways (the floor of any HTTP round trip here).
 *
 *   node --import tsx bench/http-overhead.ts [--model DIR] [--requests 120]
 *
 * Without --model it writes bench:decode's untrained `tiny` rnn-attn model (bench/decode-model.ts) to a temp
 * folder and feeds it texts of 8-15 of its source words.
 */
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { startServer } from '../serve/server.ts';
import { WorkerRuntime } from '../serve/worker-runtime.ts';
import { writeBenchModel } from './decode-model.ts';

const { values: args } = parseArgs({
  options: { model: { type: 'string' }, requests: { type: 'string', default: '120' } },
});
const requests = Number(args.requests);

const root = args.model === undefined ? await mkdtemp(join(tmpdir(), 'frost-http-overhead-')) : undefined;
const written = root === undefined ? undefined : await writeBenchModel(root, { head: 'learned', preset: 'tiny' });
const dir = args.model ?? written!.dir;
const texts =
  written === undefined
    ? ['Ein Mann fährt Fahrrad .', 'Zwei Hunde spielen im Schnee .', 'Eine Frau liest ein Buch im Park .']
    : Array.from({ length: 8 }, (_, k) =>
        Array.from(
          { length: 8 + k },
          (_, j) => written.sourceWords[(j * 37 + k * 11) % written.sourceWords.length],
        ).join(' '),
      );

const local = await loadModelDir(dir, { intraOpNumThreads: 1 });
const thread = await WorkerRuntime.start(dir, { intraOpNumThreads: 1, workers: 1 });
const server = await startServer({ modelsDir: dir, port: 0, intraOpNumThreads: 1, workers: 1, log: () => undefined });
const url = new URL(server.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const nodeRequest = (path: string, body?: string) =>
  new Promise<string>((resolve, reject) => {
    const headers = body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {};
    const req = http.request(
      { host: url.hostname, port: url.port, path, method: body ? 'POST' : 'GET', agent, headers },
      (res) => {
        let data = '';
        res.on('data', (chunk: string) => (data += chunk));
        res.on('end', () => resolve(data));
      },
    );
    req.on('error', reject);
    req.end(body);
  });

const serverTotal: number[] = [];
const ways: Record<string, (text: string) => Promise<unknown>> = {
  'in-process translate': (t) => local.translate([t]),
  'decode thread, no HTTP': (t) => thread.translateEach([t], { beam: 1, nBest: 1 }),
  'POST, node:http keep-alive': async (t) => {
    const body = JSON.parse(await nodeRequest('/v1/translate', JSON.stringify({ text: t }))) as {
      timing: { total_ms: number };
    };
    serverTotal.push(body.timing.total_ms);
  },
  'POST, fetch': async (t) => {
    const res = await fetch(`${server.url}/v1/translate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: t }),
    });
    await res.json();
  },
  'GET /healthz, node:http': () => nodeRequest('/healthz'),
  'GET /healthz, fetch': async () => (await fetch(`${server.url}/healthz`)).text(),
};

const times: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
try {
  for (const t of texts) for (const way of Object.values(ways)) await way(t);
  serverTotal.length = 0;
  for (let i = 0; i < requests; i++) {
    const text = texts[i % texts.length];
    // A fresh random order each round: no way always runs right after another one.
    const order = Object.keys(ways).sort(() => Math.random() - 0.5);
    for (const name of order) {
      const t0 = performance.now();
      await ways[name](text);
      times[name].push(performance.now() - t0);
    }
  }
} finally {
  await server.close();
  await thread.release();
  await local.release();
  agent.destroy();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [...Object.entries(times), ["server's own timing.total_ms", serverTotal] as const];
process.stdout.write(`${dir}, ${requests} requests each, interleaved\n\n| way | p50 ms |\n|---|---:|\n`);
for (const [name, xs] of rows) process.stdout.write(`| ${name} | ${median(xs).toFixed(2)} |\n`);
