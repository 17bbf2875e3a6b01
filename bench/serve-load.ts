/**
 * Load benchmark of `frost serve`: starts the server as a child process on 127.0.0.1 and drives it
 * with autocannon (loopback only, bounded in time and request count).
 *
 *   npm run bench:serve                      # c = 1, 8, 64, batching on and off (~2 min)
 *   npm run bench:serve -- --model DIR       # another exported model
 *   npm run bench:serve -- --overload 15     # c far above capacity for 15 s: only 200/503, no crash, peak RSS
 *   npm run bench:serve -- --soak 10         # 10 minutes at c=32: RSS growth after warm-up
 *
 * Writes JSON and Markdown to reports/serve-load/. Latencies are client-side, per response.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import { TINY_SOURCE_WORDS, writeTinyModelDir } from '../test/helpers/tiny-model.ts';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'bin', 'frost.js');

const { values: args } = parseArgs({
  options: {
    model: { type: 'string' },
    duration: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '1,8,64' },
    beam: { type: 'string', default: '4' },
    threads: { type: 'string', default: '1' },
    overload: { type: 'string' },
    soak: { type: 'string' },
    out: { type: 'string', default: join(ROOT, 'reports', 'serve-load') },
  },
});

/** The settings of "batching off": every request decoded on its own, all interleaved (the server before dynamic batching). */
const BATCHING_OFF = ['--max-batch', '1', '--max-wait-ms', '0', '--batch-concurrency', '256'];
const BATCHING_ON: string[] = [];

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
    [CLI, 'serve', '--models', modelDir, '--host', '127.0.0.1', '--port', '0', '--threads', args.threads!, ...extra],
    { stdio: ['ignore', 'ignore', log.fd] },
  );
  await log.close();
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r((exitCode = code))));
  let url: string | undefined;
  while (!url) {
    if (exitCode !== undefined) throw new Error(`frost serve exited with ${exitCode} before listening:\n${await readFile(logPath, 'utf8')}`);
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
  return { dir: await writeTinyModelDir(join(tmp, 'tiny')), what: 'test tiny model (hidden 8, vocab 20)', cleanup: tmp };
}

async function findCard(dir: string, depth: number): Promise<string | undefined> {
  if (existsSync(join(dir, MODEL_CARD_FILE))) return dir;
  if (depth === 0) return undefined;
  for (const e of (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const hit = await findCard(join(dir, e.name), depth - 1);
    if (hit) return hit;
  }
  return undefined;
}

/** Deterministic request bodies: short sentences over the tiny model's words (any vocabulary maps the rest to <unk>). */
function bodies(n: number, beam: number): string[] {
  let s = 42;
  const next = () => (s = (s * 16807) % 2147483647) / 2147483647;
  return Array.from({ length: n }, () => {
    const words = Array.from({ length: 4 + Math.floor(next() * 10) }, () => TINY_SOURCE_WORDS[Math.floor(next() * TINY_SOURCE_WORDS.length)]);
    return JSON.stringify({ text: words.join(' '), beam, max_len: 40 });
  });
}

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

/** One autocannon run; latencies are collected per response so any percentile can be read. */
async function load(url: string, concurrency: number, seconds: number, batching: RunResult['batching'], maxRequests?: number): Promise<RunResult> {
  const pool = bodies(64, Number(args.beam));
  let i = 0;
  const latencies: number[] = [];
  const status: Record<string, number> = {};
  let done!: (r: autocannon.Result) => void;
  let failed!: (e: unknown) => void;
  const finished = new Promise<autocannon.Result>((res, rej) => ((done = res), (failed = rej)));
  const instance = autocannon({
    url: `${url}/v1/translate`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: concurrency,
    duration: seconds,
    // A request cap, not `amount`: amount would override the duration.
    ...(maxRequests ? { maxOverallRequests: maxRequests } : {}),
    timeout: 30,
    requests: [{ setupRequest: (req) => ({ ...req, body: pool[i++ % pool.length] }) }],
  }, (err, result) => (err ? failed(err) : done(result)));
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    status[statusCode] = (status[statusCode] ?? 0) + 1;
    latencies.push(responseTime);
  });
  const result = await finished;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] * 100) / 100 : NaN);
  const total = latencies.length;
  const elapsed = result.duration;
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

function table(runs: RunResult[]): string {
  const head = '| batching | c | requests | req/s | p50 ms | p95 ms | p99 ms | status | errors |\n|---|---|---|---|---|---|---|---|---|';
  const rows = runs.map(
    (r) =>
      `| ${r.batching} | ${r.concurrency} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p95} | ${r.p99} | ${Object.entries(r.status)
        .map(([k, v]) => `${k}:${v}`)
        .join(' ')} | ${r.errors} |`,
  );
  return [head, ...rows].join('\n');
}

async function main(): Promise<void> {
  const model = await pickModel();
  const seconds = Number(args.duration);
  const report: Record<string, unknown> = {
    date: new Date().toISOString(),
    model: model.what,
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    beam: Number(args.beam),
    threads: Number(args.threads),
  };
  let markdown = `# frost serve load\n\n${report.date}, model: ${model.what}, ${cpus().length} CPUs (${cpus()[0]?.model}), beam ${args.beam}, ORT threads ${args.threads}\n\n`;
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
      Object.assign(report, { overload: run, serverDecodedRequests: served, serverRefused503: refused, peakRssMiB: mem?.peakMiB, aliveAfter: alive, exitCode, onlyOkOr503 });
      markdown += `## overload (c=1024, --max-queue 64, ${args.overload} s)\n\n${table([run])}\n\nserver side: ${served} requests decoded, ${refused} refused with 503; peak RSS ${mem?.peakMiB} MiB; alive after: ${alive}; exit code ${exitCode}; only 200/503: ${onlyOkOr503}\n`;
    } else if (args.soak) {
      name = 'serve-soak';
      const server = await startServer(model.dir, BATCHING_ON);
      await load(server.url, 32, 15, 'soak');
      const warm = await memory(server.child.pid!);
      const run = await load(server.url, 32, Math.round(Number(args.soak) * 60), 'soak');
      const end = await memory(server.child.pid!);
      const exitCode = await server.stop();
      const growth = warm && end ? Math.round((end.rssMiB - warm.rssMiB) * 10) / 10 : undefined;
      Object.assign(report, { soak: run, rssAfterWarmupMiB: warm?.rssMiB, rssEndMiB: end?.rssMiB, rssGrowthMiB: growth, peakRssMiB: end?.peakMiB, exitCode });
      markdown += `## soak (c=32, ${args.soak} min after 15 s warm-up)\n\n${table([run])}\n\nRSS after warm-up ${warm?.rssMiB} MiB, at the end ${end?.rssMiB} MiB (growth ${growth} MiB), peak ${end?.peakMiB} MiB; exit code ${exitCode}\n`;
    } else {
      const levels = args.concurrency!.split(',').map(Number);
      const runs: RunResult[] = [];
      for (const [mode, flags] of [['on', BATCHING_ON], ['off', BATCHING_OFF]] as const) {
        const server = await startServer(model.dir, flags);
        await load(server.url, 8, 1, mode); // warm-up: sessions, JIT
        for (const c of levels) {
          const run = await load(server.url, c, seconds, mode, 200_000);
          runs.push(run);
          process.stdout.write(`batching ${mode} c=${c}: ${run.rps} req/s, p50 ${run.p50} ms, p95 ${run.p95} ms, p99 ${run.p99} ms ${JSON.stringify(run.status)}\n`);
        }
        const mem = await memory(server.child.pid!);
        report[`peakRssMiB_${mode}`] = mem?.peakMiB;
        await server.stop();
      }
      const find = (b: string, c: number) => runs.find((r) => r.batching === b && r.concurrency === c);
      const maxC = Math.max(...levels);
      const minC = Math.min(...levels);
      const rpsRatio = (find('on', maxC)?.rps ?? NaN) / (find('off', maxC)?.rps ?? NaN);
      const p50Ratio = (find('on', minC)?.p50 ?? NaN) / (find('off', minC)?.p50 ?? NaN);
      Object.assign(report, { runs, [`rpsRatioOnOff_c${maxC}`]: Math.round(rpsRatio * 100) / 100, [`p50RatioOnOff_c${minC}`]: Math.round(p50Ratio * 100) / 100 });
      markdown += `${table(runs)}\n\nthroughput batching on/off at c=${maxC}: **${rpsRatio.toFixed(2)}×**; p50 latency on/off at c=${minC}: **${p50Ratio.toFixed(2)}×** (an idle model starts a lone request at once; no batching wait)\n`;
      process.stdout.write(`\nrequests/s on/off at c=${maxC}: ${rpsRatio.toFixed(2)}x; p50 on/off at c=${minC}: ${p50Ratio.toFixed(2)}x\n`);
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
