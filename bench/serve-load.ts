/**
 * Load benchmark of `frost serve`: starts the server as a child process on 127.0.0.1 and drives it
 * with autocannon (loopback only, bounded in time and request count).
 *
 *   npm run bench:serve                      # c = 1, 8, 64, batching on and off (~3 min)
 *   npm run bench:serve -- --model DIR       # another exported model
 *   npm run bench:serve -- --overload 15     # c far above capacity for 15 s: only 200/503, no crash, peak RSS
 *   npm run bench:serve -- --soak 10         # 10 minutes at c=32: RSS growth after warm-up
 *   npm run bench:serve -- --shutdown 3      # 1024 clients, SIGTERM after 3 s: how each request ended, time to exit
 *
 * Request bodies are Multi30k test2016 source sentences when the model was trained on Multi30k
 * (read from $FROST_DATA/multi30k, see train/data/paths.ts), else sentences over the tiny test
 * model's words. Writes JSON and Markdown to reports/serve-load/. Latencies are client-side, per
 * response.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { readModelCard } from '../core/runtime/load-node.ts';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import { isMulti30kLang, multi30kFileName, readGzipLines } from '../train/data/multi30k.ts';
import { multi30kDir } from '../train/data/paths.ts';
import { TINY_SOURCE_WORDS, writeTinyModelDir } from '../test/helpers/tiny-model.ts';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'bin', 'frost.js');

const { values: args } = parseArgs({
  options: {
    model: { type: 'string' },
    /** Seconds per run, one per concurrency level (or one for all). A run must last several request
     * latencies: requests still in flight at the end are not counted, and with batching off at
     * c=64 one request takes 64 decodes' time. */
    duration: { type: 'string', default: '30,10,60' },
    /** Seconds of load before each run is measured, per concurrency level (or one for all). */
    warmup: { type: 'string', default: '2,4,30' },
    concurrency: { type: 'string', default: '1,8,64' },
    beam: { type: 'string', default: '4' },
    /** ORT intra-op threads per session, as `frost serve --threads` (0: ORT picks, one per core). */
    threads: { type: 'string', default: '0' },
    workers: { type: 'string', default: '1' },
    overload: { type: 'string' },
    soak: { type: 'string' },
    shutdown: { type: 'string' },
    out: { type: 'string', default: join(ROOT, 'reports', 'serve-load') },
  },
});

/** Longer than any request can take here, so slow answers are measured rather than dropped. */
const CLIENT_TIMEOUT_S = 180;

/**
 * The settings of "batching off": every request decoded on its own, all interleaved (the server before dynamic
 * batching).
 */
const BATCHING_OFF = ['--max-batch', '1', '--max-wait-ms', '0', '--batch-concurrency', '256'];
const BATCHING_ON: string[] = [];
/**
 * For the on/off comparison only: with batching off at c=64 a request waits for 64 decodes, which is what is measured.
 */
const NO_SERVER_TIMEOUT = ['--timeout-ms', String(CLIENT_TIMEOUT_S * 1000)];

interface Server {
  url: string;
  child: ChildProcess;
  stop(): Promise<number | null>;
}

/**
 * Starts `frost serve` on a free loopback port and waits for its "listening" log line. The log
 * goes to a file, not a pipe: the server writes its log synchronously, and a pipe read by this
 * (busy) load generator would throttle the server under test.
 */
async function startServer(modelDir: string, extra: string[]): Promise<Server> {
  const logPath = join(await mkdtemp(join(tmpdir(), 'frost-bench-log-')), 'serve.log');
  const log = await open(logPath, 'w');
  const child = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--models',
      modelDir,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--threads',
      args.threads!,
      '--workers',
      args.workers!,
      ...extra,
    ],
    { stdio: ['ignore', 'ignore', log.fd] },
  );
  await log.close();
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r((exitCode = code))));
  let url: string | undefined;
  while (!url) {
    if (exitCode !== undefined)
      throw new Error(`frost serve exited with ${exitCode} before listening:\n${await readFile(logPath, 'utf8')}`);
    await new Promise((r) => setTimeout(r, 50));
    for (const line of (await readFile(logPath, 'utf8')).split('\n')) {
      try {
        const rec = JSON.parse(line) as { msg?: string; url?: string };
        if (rec.msg === 'frost serve listening' && rec.url) url = rec.url;
      } catch {
        // a partial line, or a non-JSON early failure (reported when the process exits)
      }
    }
  }
  return {
    url,
    child,
    async stop() {
      child.kill('SIGTERM');
      const code = await exited;
      await rm(dirname(logPath), { recursive: true, force: true });
      return code;
    },
  };
}

/** Resident set size and its peak (VmHWM) of a process, in MiB (Linux /proc). */
async function memory(pid: number): Promise<{ rssMiB: number; peakMiB: number } | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'))?.[1] ?? NaN);
    return { rssMiB: Math.round(kb('VmRSS') / 102.4) / 10, peakMiB: Math.round(kb('VmHWM') / 102.4) / 10 };
  } catch {
    return undefined;
  }
}

/** A model directory: --model, else a trained model under artifacts/, else the test tiny model in a temp dir. */
async function pickModel(): Promise<{ dir: string; what: string; cleanup?: string }> {
  if (args.model) return { dir: resolve(args.model), what: resolve(args.model) };
  const artifacts = join(ROOT, 'artifacts');
  const found = existsSync(artifacts) ? await findCard(artifacts, 3) : undefined;
  if (found) return { dir: found, what: found };
  const tmp = await mkdtemp(join(tmpdir(), 'frost-bench-serve-'));
  return {
    dir: await writeTinyModelDir(join(tmp, 'tiny')),
    what: 'test tiny model (hidden 8, vocab 20)',
    cleanup: tmp,
  };
}

async function findCard(dir: string, depth: number): Promise<string | undefined> {
  if (existsSync(join(dir, MODEL_CARD_FILE))) return dir;
  if (depth === 0) return undefined;
  for (const e of (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .sort((a, b) => a.name.localeCompare(b.name))) {
    const hit = await findCard(join(dir, e.name), depth - 1);
    if (hit) return hit;
  }
  return undefined;
}

/** The sentences requests carry: Multi30k test2016 in the model's source language, or tiny-vocabulary sentences. */
async function requestTexts(modelDir: string): Promise<{ texts: string[]; what: string }> {
  const card = await readModelCard(modelDir);
  const data = card.config?.data as { kind?: string; src?: string } | undefined;
  const lang = data?.src ?? card.source?.lang;
  if (data?.kind === 'multi30k' && lang && isMulti30kLang(lang)) {
    const file = join(multi30kDir(), multi30kFileName('test2016', lang));
    return { texts: (await readGzipLines(file)).filter((t) => t.trim()), what: `Multi30k test2016 (${lang}), ${file}` };
  }
  let s = 42;
  const next = () => (s = (s * 16807) % 2147483647) / 2147483647;
  const texts = Array.from({ length: 64 }, () =>
    Array.from(
      { length: 4 + Math.floor(next() * 10) },
      () => TINY_SOURCE_WORDS[Math.floor(next() * TINY_SOURCE_WORDS.length)],
    ).join(' '),
  );
  return { texts, what: "random sentences over the tiny test model's 16 words" };
}

/** Request bodies in a fixed order, so batching on and off see the same sequence. */
function bodies(texts: readonly string[], beam: number): string[] {
  return texts.map((text) => JSON.stringify({ text, beam, max_len: 40 }));
}

/** Set once in main: the bodies every run sends, in order. */
let requestBodies: string[] = [];

interface RunResult {
  batching: 'on' | 'off' | 'overload' | 'soak';
  concurrency: number;
  seconds: number;
  requests: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  status: Record<string, number>;
  errors: number;
}

/**
 * One autocannon run of `warmup + seconds`; only responses that arrive after the warm-up count, so
 * the numbers are steady state (at t=0 every connection starts at once, and with batching off at
 * c=64 the first answers take 64 decodes' time). Latencies are kept per response.
 */
async function load(
  url: string,
  concurrency: number,
  seconds: number,
  batching: RunResult['batching'],
  { warmup = 0, maxRequests }: { warmup?: number; maxRequests?: number } = {},
): Promise<RunResult> {
  const pool = requestBodies;
  let i = 0;
  const latencies: number[] = [];
  const status: Record<string, number> = {};
  let done!: (r: autocannon.Result) => void;
  let failed!: (e: unknown) => void;
  const finished = new Promise<autocannon.Result>((res, rej) => ((done = res), (failed = rej)));
  const started = performance.now();
  const instance = autocannon(
    {
      url: `${url}/v1/translate`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      connections: concurrency,
      duration: warmup + seconds,
      // A request cap, not `amount`: amount would override the duration.
      ...(maxRequests ? { maxOverallRequests: maxRequests } : {}),
      timeout: CLIENT_TIMEOUT_S,
      requests: [{ setupRequest: (req) => ({ ...req, body: pool[i++ % pool.length] }) }],
    },
    (err, result) => (err ? failed(err) : done(result)),
  );
  let measuredFrom: number | undefined;
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    const now = performance.now();
    if (now - started < warmup * 1000) return;
    measuredFrom ??= started + warmup * 1000;
    status[statusCode] = (status[statusCode] ?? 0) + 1;
    latencies.push(responseTime);
  });
  const result = await finished;
  const elapsed = (performance.now() - (measuredFrom ?? started + warmup * 1000)) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies.length
      ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] * 100) / 100
      : NaN;
  const total = latencies.length;
  return {
    batching,
    concurrency,
    seconds: Math.round(elapsed * 100) / 100,
    requests: total,
    rps: Math.round((total / elapsed) * 10) / 10,
    p50: pct(0.5),
    p95: pct(0.95),
    p99: pct(0.99),
    status,
    errors: result.errors + result.timeouts,
  };
}

/**
 * Loads a server with 1024 keep-alive clients and sends it SIGTERM after `afterS` seconds, while
 * requests keep coming. Every request is classed by whether it was sent before or after the
 * signal, and by how it ended: an answer (200, 503, ...), a reset connection, or a connection
 * refused once the listening socket is closed. What the server owes is an answer to every request
 * sent before the signal; a storm of clients reconnecting after it meets a closing listener.
 */
async function shutdownUnderLoad(modelDir: string, afterS: number) {
  const server = await startServer(modelDir, ['--max-queue', '64']);
  const target = new URL(`${server.url}/v1/translate`);
  const agent = new Agent({ keepAlive: true, maxSockets: 1024 });
  const tally: Record<'load' | 'inFlight' | 'after', Record<string, number>> = { load: {}, inFlight: {}, after: {} };
  let sigterm: number | undefined = undefined;
  let stopped = false;
  const post = (body: string) =>
    new Promise<string>((resolve) => {
      const req = request(target, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.statusCode)));
        res.on('error', () => resolve('reset'));
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        resolve(
          err.code === 'ECONNREFUSED'
            ? 'refused'
            : err.code === 'ECONNRESET' || err.message === 'socket hang up'
              ? 'reset'
              : (err.code ?? err.message),
        );
      });
      req.end(body);
    });
  const client = async (i: number) => {
    for (let n = i; !stopped; n++) {
      const sentBefore = sigterm === undefined;
      const outcome = await post(requestBodies[n % requestBodies.length]!);
      const phase = !sentBefore ? 'after' : sigterm === undefined ? 'load' : 'inFlight';
      tally[phase][outcome] = (tally[phase][outcome] ?? 0) + 1;
      if (outcome === 'refused' || outcome === 'reset') await new Promise((r) => setTimeout(r, 50));
    }
  };
  const clients = Array.from({ length: 1024 }, (_, i) => client(i));
  await new Promise((r) => setTimeout(r, afterS * 1000));
  const exited = new Promise<number | null>((r) => server.child.once('exit', (code) => r(code)));
  sigterm = performance.now();
  server.child.kill('SIGTERM');
  const exitCode = await exited;
  const exitMs = Math.round(performance.now() - sigterm);
  await new Promise((r) => setTimeout(r, 500));
  stopped = true;
  await Promise.all(clients);
  agent.destroy();
  return {
    beforeSigterm: tally.load,
    inFlightAtSigterm: tally.inFlight,
    sentAfterSigterm: tally.after,
    exitMs,
    exitCode,
  };
}

function table(runs: RunResult[]): string {
  const head =
    '| batching | c | requests | req/s | p50 ms | p95 ms | p99 ms | status | errors |\n|---|---|---|---|---|---|---|---|---|';
  const rows = runs.map(
    (r) =>
      `| ${r.batching} | ${r.concurrency} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p95} | ${r.p99} | ${Object.entries(
        r.status,
      )
        .map(([k, v]) => `${k}:${v}`)
        .join(' ')} | ${r.errors} |`,
  );
  return [head, ...rows].join('\n');
}

async function main(): Promise<void> {
  const model = await pickModel();
  const requests = await requestTexts(model.dir);
  requestBodies = bodies(requests.texts, Number(args.beam));
  const report: Record<string, unknown> = {
    date: new Date().toISOString(),
    model: model.what,
    requests: `${requests.texts.length} texts: ${requests.what}`,
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    beam: Number(args.beam),
    threads: Number(args.threads),
    workers: Number(args.workers),
  };
  let markdown =
    `# frost serve load\n\n${report.date}, model: ${model.what}, ${cpus().length} CPUs (${cpus()[0]?.model}), ` +
    `beam ${args.beam}, max_len 40, ${args.workers} decode worker(s), ORT threads ${args.threads}; request texts: ${report.requests}\n\n`;
  let name = 'serve-load';

  try {
    if (args.overload) {
      name = 'serve-overload';
      const server = await startServer(model.dir, ['--max-queue', '64']);
      const run = await load(server.url, 1024, Number(args.overload), 'overload');
      const mem = await memory(server.child.pid!);
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      const served = Number(metrics.match(/^frost_batch_requests_sum\{[^}]*\} (\d+)/m)?.[1] ?? 0);
      const refused = Number(metrics.match(/^frost_errors_total\{code="FROST_ERR_OVERLOADED"\} (\d+)/m)?.[1] ?? 0);
      const alive = (await fetch(`${server.url}/healthz`)).status === 200;
      const exitCode = await server.stop();
      const onlyOkOr503 = Object.keys(run.status).every((s) => s === '200' || s === '503');
      Object.assign(report, {
        overload: run,
        serverDecodedRequests: served,
        serverRefused503: refused,
        peakRssMiB: mem?.peakMiB,
        aliveAfter: alive,
        exitCode,
        onlyOkOr503,
      });
      markdown += `## overload (c=1024, --max-queue 64, ${args.overload} s)\n\n${table([run])}\n\nserver side: ${served} requests decoded, ${refused} refused with 503; peak RSS ${mem?.peakMiB} MiB; alive after: ${alive}; exit code ${exitCode}; only 200/503: ${onlyOkOr503}\n`;
    } else if (args.shutdown) {
      name = 'serve-shutdown';
      const result = await shutdownUnderLoad(model.dir, Number(args.shutdown));
      Object.assign(report, { shutdown: result });
      markdown +=
        `## SIGTERM under load (1024 keep-alive clients, --max-queue 64, SIGTERM after ${args.shutdown} s)\n\n` +
        `requests sent and ended before SIGTERM: ${JSON.stringify(result.beforeSigterm)}; ` +
        `in flight at SIGTERM: ${JSON.stringify(result.inFlightAtSigterm)}; ` +
        `sent after it: ${JSON.stringify(result.sentAfterSigterm)}; SIGTERM to exit: ${result.exitMs} ms; exit code ${result.exitCode}\n`;
    } else if (args.soak) {
      name = 'serve-soak';
      const server = await startServer(model.dir, BATCHING_ON);
      await load(server.url, 32, 15, 'soak');
      const warm = await memory(server.child.pid!);
      const run = await load(server.url, 32, Math.round(Number(args.soak) * 60), 'soak');
      const end = await memory(server.child.pid!);
      const exitCode = await server.stop();
      const growth = warm && end ? Math.round((end.rssMiB - warm.rssMiB) * 10) / 10 : undefined;
      const growthPct = warm && end ? Math.round(((end.rssMiB - warm.rssMiB) / warm.rssMiB) * 1000) / 10 : undefined;
      Object.assign(report, {
        soak: run,
        rssAfterWarmupMiB: warm?.rssMiB,
        rssEndMiB: end?.rssMiB,
        rssGrowthMiB: growth,
        rssGrowthPercent: growthPct,
        peakRssMiB: end?.peakMiB,
        exitCode,
      });
      markdown += `## soak (c=32, ${args.soak} min after 15 s warm-up)\n\n${table([run])}\n\nRSS after warm-up ${warm?.rssMiB} MiB, at the end ${end?.rssMiB} MiB (growth ${growth} MiB, **${growthPct}%**), peak ${end?.peakMiB} MiB; exit code ${exitCode}\n`;
    } else {
      const levels = args.concurrency!.split(',').map(Number);
      const durations = args.duration!.split(',').map(Number);
      const warmups = args.warmup!.split(',').map(Number);
      const runs: RunResult[] = [];
      // The two servers run side by side, loaded at the same time with the same requests: the
      // machine is shared with other work whose load changes by the minute, and this way both
      // sides of a ratio see the same background, and each gets about half of what is left.
      const servers = {
        on: await startServer(model.dir, [...BATCHING_ON, ...NO_SERVER_TIMEOUT]),
        off: await startServer(model.dir, [...BATCHING_OFF, ...NO_SERVER_TIMEOUT]),
      };
      await Promise.all((['on', 'off'] as const).map((mode) => load(servers[mode].url, 8, 2, mode))); // sessions, JIT
      for (const [i, c] of levels.entries()) {
        const seconds = durations[i] ?? durations[0];
        const warmup = warmups[i] ?? warmups[0];
        const pair = await Promise.all(
          (['on', 'off'] as const).map((mode) =>
            load(servers[mode].url, c, seconds, mode, { warmup, maxRequests: 200_000 }),
          ),
        );
        for (const run of pair) {
          runs.push(run);
          process.stdout.write(
            `batching ${run.batching} c=${c}: ${run.rps} req/s, p50 ${run.p50} ms, p95 ${run.p95} ms, p99 ${run.p99} ms ${JSON.stringify(run.status)}\n`,
          );
        }
      }
      for (const mode of ['on', 'off'] as const) {
        report[`peakRssMiB_${mode}`] = (await memory(servers[mode].child.pid!))?.peakMiB;
        await servers[mode].stop();
      }
      runs.sort((a, b) => (a.batching === b.batching ? a.concurrency - b.concurrency : a.batching === 'on' ? -1 : 1));
      const find = (b: string, c: number) => runs.find((r) => r.batching === b && r.concurrency === c);
      const maxC = Math.max(...levels);
      const minC = Math.min(...levels);
      const rpsRatio = (find('on', maxC)?.rps ?? NaN) / (find('off', maxC)?.rps ?? NaN);
      const p50Ratio = (find('on', minC)?.p50 ?? NaN) / (find('off', minC)?.p50 ?? NaN);
      Object.assign(report, {
        runs,
        [`rpsRatioOnOff_c${maxC}`]: Math.round(rpsRatio * 100) / 100,
        [`p50RatioOnOff_c${minC}`]: Math.round(p50Ratio * 100) / 100,
      });
      markdown += `${table(runs)}\n\nthroughput batching on/off at c=${maxC}: **${rpsRatio.toFixed(2)}×**; p50 latency on/off at c=${minC}: **${p50Ratio.toFixed(2)}×** (an idle model starts a lone request at once; no batching wait)\n`;
      process.stdout.write(
        `\nrequests/s on/off at c=${maxC}: ${rpsRatio.toFixed(2)}x; p50 on/off at c=${minC}: ${p50Ratio.toFixed(2)}x\n`,
      );
    }
  } finally {
    if (model.cleanup) await rm(model.cleanup, { recursive: true, force: true });
  }

  await mkdir(args.out!, { recursive: true });
  const jsonPath = join(args.out!, `${name}.json`);
  await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(join(args.out!, `${name}.md`), markdown);
  process.stdout.write(`\n${markdown}\nwrote ${jsonPath} and ${name}.md in ${dirname(jsonPath)}\n`);
}

await main();
