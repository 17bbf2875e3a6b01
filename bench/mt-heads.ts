/**
 * Trains one translation model per output head under the same time budget, side by side (so they
 * share the machine's noise), exports each to ONNX, and scores Multi30k test2016 with beam 5 through
 * onnxruntime-node. Writes results.json and results.md to --out and prints the table.
 *
 *   node --import tsx bench/mt-heads.ts --minutes 30 --heads learned,fixed-l2 --src de --tgt en
 *
 * Finished runs are reused: rerunning the command only redoes what is missing.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { corpusBleu } from '../core/metrics/bleu.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { loadParallelCorpus } from '../train/data/corpus.ts';
import { multi30kDir, REPO_ROOT } from '../train/data/paths.ts';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    heads: { type: 'string', default: 'learned,fixed-l2' },
    src: { type: 'string', default: 'de' },
    tgt: { type: 'string', default: 'en' },
    preset: { type: 'string', default: 'small' },
    beam: { type: 'string', default: '5' },
    out: { type: 'string', default: 'runs/bench-mt-heads' },
    seed: { type: 'string', default: '1' },
  },
});

const heads = args.heads!.split(',');
const minutes = Number(args.minutes);
const outDir = resolve(args.out!);
const dataDir = multi30kDir();
const cli = join(REPO_ROOT, 'bin', 'frost.js');
const threadsEach = Math.max(1, Math.floor(availableParallelism() / heads.length));

function run(argv: string[], env: Record<string, string> = {}, logFile?: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [cli, ...argv], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    const collect = (chunk: Buffer) => {
      log += chunk.toString();
      if (log.length > 200_000) log = log.slice(-100_000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('close', async (code) => {
      if (logFile) await writeFile(logFile, log);
      if (code === 0) resolvePromise();
      else reject(new Error(`frost ${argv.join(' ')} exited with ${code}:\n${log.slice(-2000)}`));
    });
  });
}

async function lastMetrics(runDir: string): Promise<Record<string, number>> {
  const lines = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8')).trim().split('\n');
  return JSON.parse(lines[lines.length - 1]) as Record<string, number>;
}

await mkdir(outDir, { recursive: true });
const started = Date.now();
process.stderr.write(`training ${heads.join(', ')} side by side for ${minutes} min each, ${threadsEach} wasm thread(s) each\n`);
await Promise.all(
  heads.map(async (head) => {
    const runDir = join(outDir, `${args.src}-${args.tgt}-${head}`);
    const common = ['--max-minutes', String(minutes), '--quiet'];
    const argv = existsSync(join(runDir, 'config.json'))
      ? ['train', '--resume', runDir, ...common]
      : ['train', '--data', dataDir, '--src', args.src!, '--tgt', args.tgt!, '--preset', args.preset!, '--head', head, '--seed', args.seed!, '--out', runDir, ...common];
    await run(argv, { FROST_WASM_THREADS: String(threadsEach) }, join(outDir, `${head}.train.log`));
  }),
);

const corpus = await loadParallelCorpus({ dataDir, src: args.src, tgt: args.tgt, kind: 'multi30k' });
const rows = [];
for (const head of heads) {
  const runDir = join(outDir, `${args.src}-${args.tgt}-${head}`);
  const modelDir = join(outDir, 'artifacts', `${args.src}-${args.tgt}-${head}`);
  await run(['export', runDir, '--out', modelDir, '--quiet']);
  const runtime = await loadModelDir(modelDir, { intraOpNumThreads: availableParallelism() });
  const t0 = Date.now();
  const hyps: string[] = [];
  for (let i = 0; i < corpus.test.length; i += 32) {
    const batch = corpus.test.slice(i, i + 32).map((p) => p.src);
    for (const t of await runtime.translate(batch, { beam: Number(args.beam) })) hyps.push(t.text);
  }
  const decodeSeconds = (Date.now() - t0) / 1000;
  await writeFile(join(outDir, `${head}.test2016.hyp`), `${hyps.join('\n')}\n`);
  const bleu = corpusBleu(hyps, [corpus.test.map((p) => p.tgt)], { lowercase: true });
  const card = runtime.card;
  const metrics = await lastMetrics(runDir);
  rows.push({
    head,
    learnable: card.params.learnable,
    frozen: card.params.frozen,
    epochs: `${metrics.epoch}${metrics.complete ? '' : ' (partial)'}`,
    steps: metrics.step,
    trainMinutes: metrics.elapsedMinutes,
    valBleuGreedy: card.metrics.valBleu,
    testBleu: bleu.score,
    bleuLine: bleu.format(),
    onnxBytes: Object.values(card.files).reduce((n, f) => n + f.bytes, 0),
    decodeSeconds,
  });
  await runtime.release();
}

const learned = rows.find((r) => r.head === 'learned');
const machine = `${cpus()[0]?.model ?? 'cpu'} x${availableParallelism()}, Node ${process.version}, onnxruntime-node ${ort.env.versions.node}`;
const table = [
  `Multi30k ${args.src}→${args.tgt}, rnn-attn/${args.preset}, ${minutes} min training budget per head (side by side), test2016 BLEU with beam ${args.beam} (sacreBLEU 13a, lowercased, detokenised output vs raw references).`,
  `Machine: ${machine}.`,
  '',
  '| head | learnable params | vs learned | epochs | steps | val BLEU (greedy) | test2016 BLEU (beam) | ONNX bytes |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => {
    const rel = learned ? `${(((r.learnable - learned.learnable) / learned.learnable) * 100).toFixed(1)}%` : '';
    return `| ${r.head} | ${r.learnable.toLocaleString('en')} | ${rel} | ${r.epochs} | ${r.steps} | ${Number(r.valBleuGreedy ?? NaN).toFixed(2)} | ${r.testBleu.toFixed(2)} | ${r.onnxBytes.toLocaleString('en')} |`;
  }),
  '',
  `Command: \`npm run bench:mt-heads -- --minutes ${minutes} --heads ${heads.join(',')} --src ${args.src} --tgt ${args.tgt}\` (${((Date.now() - started) / 60000).toFixed(1)} min wall).`,
].join('\n');
await writeFile(join(outDir, 'results.json'), `${JSON.stringify({ machine, args, rows }, null, 2)}\n`);
await writeFile(join(outDir, 'results.md'), `${table}\n`);
process.stdout.write(`${table}\n`);
