/**
 * Where a `POST /v1/translate` spends its time at c=1, every way interleaved in a fresh random order per round
 * so the machine's load touches them alike: in-process `translate`, the decode thread without HTTP
 * (`WorkerRuntime`), the server's own `timing.total_ms`, and `POST /v1/translate` and a bare `GET /healthz` from
 * a client in a process of its own (bench/http-client-child.ts), as a deployment's clients are; and, as floors,
 * the same POST to a bare node:http server (no express, no validation, no metrics) that decodes through the
 * decode thread or in its own thread. Optionally
 * also from clients inside the server's process (node:http and `fetch`), whose work then shares the server's
 * event loop: the figures of earlier sessions. Shared by bench/http-overhead.ts and bench:decode.
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { loadModelDir } from '../core/runtime/load-node.ts';
import type { TranslateResponse } from '../core/wire.ts';
import { startServer } from '../serve/server.ts';
import { WorkerRuntime } from '../serve/worker-runtime.ts';
import type { ClientAnswer, ClientAsk } from './http-client-child.ts';

export interface HttpLatencyOptions {
  /** The model folder served and loaded. */
  dir: string;
  /** Request texts, used in turn. */
  texts: readonly string[];
  /** Rounds: each way runs once per round. */
  requests: number;
  /** onnxruntime intra-op threads, for every way. @default 1 */
  threads?: number;
  /** Also time clients in the server's own process (node:http keep-alive and `fetch`). @default false */
  inProcessClients?: boolean;
  /**
   * Also time the stages of each client-process POST inside the server, through hooks on this process's
   * node:http and worker_threads (nothing in serve/ is changed): see {@link STAGE}. @default false
   */
  stages?: boolean;
}

/** Stages of a POST inside the server, each from the end of the one before. */
export const STAGE = {
  route: 'request parsed by node:http → postMessage to the decode thread (express, body, validation, batcher)',
  decode: "postMessage → the decode thread's `done` received (two hops and the decode)",
  answer: '`done` received → `res.end` called (promise chain, JSON, headers)',
  write: '`res.end` (the socket write)',
} as const;

export const WAY = {
  local: 'in-process translate',
  thread: 'WorkerRuntime (decode thread, no HTTP)',
  serverTotal: "server's own timing.total_ms",
  post: 'POST /v1/translate, client process',
  healthz: 'GET /healthz, client process',
  bareThread: 'POST, client process, to a bare node:http server handing to a decode thread',
  bareLocal: 'POST, client process, to a bare node:http server decoding in its own thread',
  postSame: "POST, node:http in the server's process",
  postFetch: "POST, fetch in the server's process",
  healthzSame: "GET /healthz, node:http in the server's process",
} as const;

export interface HttpLatency {
  /** Milliseconds per way, in round order (`WAY` names). */
  times: Map<string, number[]>;
  /** Milliseconds per stage of the client-process POSTs (`STAGE` names), with `stages`. */
  stages?: Map<string, number[]>;
  loadBefore: number[];
  loadAfter: number[];
}

/** A forked bench/http-client-child.ts and its pending asks. */
class ClientProcess {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, (a: ClientAnswer) => void>();
  private nextId = 1;

  constructor() {
    this.child = fork(fileURLToPath(new URL('./http-client-child.ts', import.meta.url)), {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (a: ClientAnswer) => {
      this.pending.get(a.id)?.(a);
      this.pending.delete(a.id);
    });
  }

  async ask(url: string, body?: string): Promise<ClientAnswer> {
    const id = this.nextId++;
    const answer = await new Promise<ClientAnswer>((resolve) => {
      this.pending.set(id, resolve);
      this.child.send({ id, url, body } satisfies ClientAsk);
    });
    if (answer.status !== 200) throw new Error(`${url}: ${answer.status} ${JSON.stringify(answer.json)}`);
    return answer;
  }

  close(): void {
    this.child.disconnect();
  }
}

/** node:http from this process, keep-alive, one socket. */
function sameProcessClient(): { request(url: string, body?: string): Promise<string>; close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  return {
    request: (url, body) =>
      new Promise<string>((resolve, reject) => {
        const headers = body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {};
        const req = http.request(url, { method: body ? 'POST' : 'GET', agent, headers }, (res) => {
          let data = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (data += chunk));
          res.on('end', () => resolve(data));
        });
        req.on('socket', (socket) => socket.setNoDelay(true));
        req.on('error', reject);
        req.end(body);
      }),
    close: () => agent.destroy(),
  };
}

/**
 * The least an HTTP server can add: read the body, parse it, decode, write the answer, nothing else (no
 * express, no validation, no metrics, no deadline). Its overhead is the floor under frost's, for either place
 * of decoding.
 */
async function bareServer(decode: (text: string) => Promise<string>): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    const reply = (status: number, json: unknown) => {
      const body = JSON.stringify(json);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    // A failure is answered, not left hanging: the client process would wait on it for ever.
    const fail = (err: unknown) => reply(500, { error: { message: String(err) } });
    req.on('error', fail);
    req.on('end', () => {
      let text: string;
      try {
        ({ text } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { text: string });
      } catch (err) {
        reply(400, { error: { message: String(err) } });
        return;
      }
      decode(text).then((out) => reply(200, { translations: [{ text: out }] }), fail);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1/translate`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Runs every way `requests` times, interleaved, against one server with 1 decode thread. */
export async function measureHttpLatency(opts: HttpLatencyOptions): Promise<HttpLatency> {
  const threads = opts.threads ?? 1;
  const local = await loadModelDir(opts.dir, { intraOpNumThreads: threads });
  const thread = await WorkerRuntime.start(opts.dir, { intraOpNumThreads: threads, workers: 1 });
  const server = await startServer({
    modelsDir: opts.dir,
    port: 0,
    intraOpNumThreads: threads,
    workers: 1,
    log: () => undefined,
  });
  const bareThread = await bareServer(async (t) => (await thread.translateEach([t], { beam: 1, nBest: 1 }))[0].text);
  const bareLocal = await bareServer(async (t) => (await local.translate([t]))[0].text);
  const client = new ClientProcess();
  const same = sameProcessClient();
  const translateUrl = `${server.url}/v1/translate`;
  const healthzUrl = `${server.url}/healthz`;
  const body = (text: string) => JSON.stringify({ text });

  const serverTotal: number[] = [];
  /** Each way returns its own time: the client process's is measured there. */
  const ways: Record<string, (text: string) => Promise<number>> = {
    [WAY.local]: (t) => timed(() => local.translate([t])),
    [WAY.thread]: (t) => timed(() => thread.translateEach([t], { beam: 1, nBest: 1 })),
    [WAY.post]: async (t) => {
      const a = await client.ask(translateUrl, body(t));
      serverTotal.push((a.json as TranslateResponse).timing.total_ms);
      return a.ms;
    },
    [WAY.healthz]: async () => (await client.ask(healthzUrl)).ms,
    [WAY.bareThread]: async (t) => (await client.ask(bareThread.url, body(t))).ms,
    [WAY.bareLocal]: async (t) => (await client.ask(bareLocal.url, body(t))).ms,
  };
  if (opts.inProcessClients) {
    ways[WAY.postSame] = (t) => timed(async () => JSON.parse(await same.request(translateUrl, body(t))));
    ways[WAY.postFetch] = (t) =>
      timed(async () => {
        const res = await fetch(translateUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: body(t),
        });
        return res.json();
      });
    ways[WAY.healthzSame] = () => timed(async () => JSON.parse(await same.request(healthzUrl)));
  }

  const stages = opts.stages ? watchStages(server.registry.list()[0].runtime) : undefined;
  if (stages) {
    const post = ways[WAY.post];
    ways[WAY.post] = async (t) => {
      stages.start();
      const ms = await post(t);
      stages.record();
      return ms;
    };
  }

  const times = new Map<string, number[]>(Object.keys(ways).map((k) => [k, []]));
  const loadBefore = loadavg();
  try {
    // Warm-up: sessions, JIT, sockets.
    for (const t of opts.texts.slice(0, 8)) for (const way of Object.values(ways)) await way(t);
    serverTotal.length = 0;
    stages?.times.forEach((xs) => (xs.length = 0));
    for (let i = 0; i < opts.requests; i++) {
      const text = opts.texts[i % opts.texts.length];
      // A fresh random order each round: no way always runs right after another one.
      const order = Object.keys(ways).sort(() => Math.random() - 0.5);
      for (const name of order) times.get(name)!.push(await ways[name](text));
    }
  } finally {
    stages?.stop();
    client.close();
    same.close();
    await server.close();
    await bareThread.close();
    await bareLocal.close();
    await thread.release();
    await local.release();
  }
  times.set(WAY.serverTotal, serverTotal);
  return { times, stages: stages?.times, loadBefore, loadAfter: loadavg() };
}

/**
 * Timestamps of one POST inside the server: node:http's `http.server.request.start` diagnostics channel, the
 * decode thread's postMessage and its `done` message, and `res.end`. Hooks on this process only.
 */
function watchStages(runtime: unknown): {
  times: Map<string, number[]>;
  start(): void;
  record(): void;
  stop(): void;
} {
  if (!(runtime instanceof WorkerRuntime) || runtime.threads.length !== 1)
    throw new Error('--stages needs the server to decode in one thread');
  const worker = runtime.threads[0].worker;
  const times = new Map<string, number[]>(Object.values(STAGE).map((s) => [s, []]));
  let marks: { request?: number; post?: number; done?: number; end?: number; written?: number } = {};
  let on = false;
  const onRequest = () => {
    if (on) marks.request ??= performance.now();
  };
  subscribe('http.server.request.start', onRequest);
  const postMessage = worker.postMessage;
  worker.postMessage = function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
    if (on && marks.request !== undefined) marks.post ??= performance.now();
    return postMessage.apply(this, args);
  };
  const onMessage = (msg: { type?: string }) => {
    if (on && msg.type === 'done') marks.done ??= performance.now();
  };
  worker.on('message', onMessage);
  const end = http.ServerResponse.prototype.end;
  http.ServerResponse.prototype.end = function (this: http.ServerResponse, ...args: unknown[]) {
    const watched = on && marks.done !== undefined && marks.end === undefined;
    if (watched) marks.end = performance.now();
    const r = (end as (...a: unknown[]) => http.ServerResponse).apply(this, args);
    if (watched) marks.written = performance.now();
    return r;
  } as typeof end;
  return {
    times,
    start() {
      marks = {};
      on = true;
    },
    record() {
      on = false;
      const { request, post, done, end: ended, written } = marks;
      if ([request, post, done, ended, written].some((m) => m === undefined)) return;
      times.get(STAGE.route)!.push(post! - request!);
      times.get(STAGE.decode)!.push(done! - post!);
      times.get(STAGE.answer)!.push(ended! - done!);
      times.get(STAGE.write)!.push(written! - ended!);
    },
    stop() {
      unsubscribe('http.server.request.start', onRequest);
      worker.postMessage = postMessage;
      worker.off('message', onMessage);
      http.ServerResponse.prototype.end = end;
    },
  };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** The table and the overhead lines the docs quote. */
export function formatHttpLatency(result: HttpLatency): string {
  const { times } = result;
  const p50 = (way: string) => percentile(times.get(way)!, 50);
  const order = [
    WAY.local,
    WAY.thread,
    WAY.serverTotal,
    WAY.post,
    WAY.healthz,
    WAY.bareThread,
    WAY.bareLocal,
    WAY.postSame,
    WAY.postFetch,
  ];
  const rows = [...order, WAY.healthzSame].filter((w) => times.has(w));
  const lines = ['| way | p50 ms | p90 ms |', '|---|---:|---:|'];
  for (const w of rows) lines.push(`| ${w} | ${p50(w).toFixed(2)} | ${percentile(times.get(w)!, 90).toFixed(2)} |`);
  // Each round runs every way on the same text, so the median of a round's differences is less exposed to the
  // machine's load than the difference of two medians.
  const paired = (a: string, b: string) => {
    const [xs, ys] = [times.get(a)!, times.get(b)!];
    return percentile(
      xs.map((x, i) => x - ys[i]),
      50,
    );
  };
  const overhead = (way: string, label: string) =>
    `${label}: ${(p50(way) - p50(WAY.local)).toFixed(2)} ms (p50 minus in-process p50; median of paired differences ${paired(way, WAY.local).toFixed(2)} ms)`;
  lines.push(
    '',
    overhead(WAY.post, 'HTTP overhead at c=1, client process'),
    overhead(WAY.serverTotal, "server's own share (timing.total_ms)"),
    overhead(WAY.thread, 'decode-thread hop (WorkerRuntime, no HTTP)'),
  );
  // The server decodes in a thread; under load, waking a thread costs milliseconds that no HTTP code spends.
  lines.push(
    `HTTP on top of the decode thread (POST p50 minus WorkerRuntime p50): ${(p50(WAY.post) - p50(WAY.thread)).toFixed(2)} ms ` +
      `(median of paired differences ${paired(WAY.post, WAY.thread).toFixed(2)} ms)`,
  );
  if (times.has(WAY.bareThread))
    lines.push(
      overhead(WAY.bareThread, 'floor: a bare node:http server handing to a decode thread'),
      overhead(WAY.bareLocal, 'floor: a bare node:http server decoding in its own thread'),
      `frost's server on top of the bare one, both with a decode thread: ${(p50(WAY.post) - p50(WAY.bareThread)).toFixed(2)} ms ` +
        `(median of paired differences ${paired(WAY.post, WAY.bareThread).toFixed(2)} ms)`,
    );
  if (times.has(WAY.postSame)) lines.push(overhead(WAY.postSame, "HTTP overhead, node:http in the server's process"));
  if (result.stages) {
    lines.push('', '| stage of a client-process POST, inside the server | p50 ms | p90 ms |', '|---|---:|---:|');
    for (const [stage, xs] of result.stages)
      lines.push(`| ${stage} | ${percentile(xs, 50).toFixed(3)} | ${percentile(xs, 90).toFixed(3)} |`);
    lines.push(`(${result.stages.get(STAGE.route)!.length} POSTs with every mark)`);
  }
  const load = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' ');
  lines.push(`load average ${load(result.loadBefore)} before, ${load(result.loadAfter)} after`);
  return lines.join('\n') + '\n';
}
