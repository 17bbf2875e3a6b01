/**
 * Issue #41: where a batched Transformer decode's time goes, and whether a change to the step graph or the runtime
 * makes it faster. The model is bench:decode's Transformer (`small`, `learned` head, seeded, joint-sized 8,000
 * vocabularies), sources of 20 tokens, outputs forced to 20 tokens then </s>, onnxruntime-node on 1 intra-op thread.
 *
 *   node --import tsx bench/investigations/transformer-decode.ts --save /tmp/base       # the model as exported now
 *   node --import tsx bench/investigations/transformer-decode.ts --save /tmp/base --cache concat  # the Concat caches
 *   node --import tsx bench/investigations/transformer-decode.ts --vs /tmp/base/<name>  # this tree's export against it
 *   node --import tsx bench/investigations/transformer-decode.ts --profile --modes 'greedy b64'   # per-op profile
 *   node --import tsx bench/investigations/transformer-decode.ts --split    # where a whole decode's time goes
 *   node --import tsx bench/investigations/transformer-decode.ts --pool-ab --rounds 8   # the buffer pool's gain
 *
 * `--vs` decodes the same chunks with both folders alternately (`--rounds`; `--new DIR` times a saved folder instead
 * of this tree's export), checks that they give the same tokens, and prints each mode's medians of CPU ms per
 * sentence and the median of the rounds' base / new ratios (above 1: the new side is faster). CPU time, because on
 * a loaded machine wall time mostly measures the other processes. `--profile` prints onnxruntime's kernel time per
 * op type (per node with BY_NODE=1) as shares of the decoder's kernels (the encoder's with `--role encoder`), and
 * the kernels' share of `session.run`.
 * `--pool-ab` times this tree's export through two runtimes, one with its buffer pool and one whose pool keeps
 * nothing (CPU ms per sentence, alternately, `--rounds`). `--split` times whole decodes (wall, `--rounds`, medians
 * per sentence) and splits them into the encoder's and the decoder's `session.run`, the runtime's reorders, the rest
 * of its steps (feeds, writing new cache positions) and what is left (search in JS, GC).
 */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generate } from '../../core/decode/generate.ts';
import type { Hypothesis } from '../../core/decode/types.ts';
import { BufferPool } from '../../core/runtime/buffer-pool.ts';
import { loadModelDir } from '../../core/runtime/load-node.ts';
import { Seq2SeqRuntime } from '../../core/runtime/seq2seq.ts';
import { createNodeSession, ort } from '../../core/runtime/ort-node.ts';
import type { InferenceSession } from 'onnxruntime-common';
import type { Precision } from '../../export/precision.ts';
import { writeBenchModel } from '../decode-model.ts';
import { chunks, DECODE_MODES, median, selectModes } from '../whole-rows-compare.ts';

const { values: args } = parseArgs({
  options: {
    save: { type: 'string' },
    vs: { type: 'string' },
    /** --vs: a saved folder to time instead of this tree's export. */
    new: { type: 'string' },
    profile: { type: 'boolean', default: false },
    split: { type: 'boolean', default: false },
    modes: { type: 'string', default: 'greedy b1,greedy b64,beam5 b1,beam5 b16' },
    precision: { type: 'string', default: 'fp32' },
    rounds: { type: 'string', default: '5' },
    len: { type: 'string', default: '20' },
    vocab: { type: 'string', default: '8000' },
    /** The step graph's key/value caches: `append` (as exported) or `concat` (the form before issue #41's change). */
    cache: { type: 'string', default: 'append' },
    /** --profile: the graph to profile, `decoder` (its steps) or `encoder`. */
    role: { type: 'string', default: 'decoder' },
    /** The runtime's buffer pool (core/runtime/buffer-pool.ts) against a pool that keeps nothing, one process. */
    'pool-ab': { type: 'boolean', default: false },
  },
});
const V = Number(args.vocab);
const len = Number(args.len);
const opts = {
  arch: 'transformer',
  head: 'learned',
  preset: 'small',
  precision: args.precision as Precision,
  srcVocab: V,
  tgtVocab: V,
  decoderCache: args.cache as 'concat' | 'append',
} as const;

/** Seeded sources of exactly 20 tokens (the measurement). */
function sources(n: number): number[][] {
  return Array.from({ length: n }, (_, i) => Array.from({ length: 20 }, (_, j) => 4 + ((i * 131 + j * 37) % (V - 4))));
}

async function decode(
  rt: Seq2SeqRuntime,
  parts: number[][][],
  beam: number,
): Promise<{ ms: number; hyps: Hypothesis[][][] }> {
  // CPU time of the process (onnxruntime's thread and JS): on a loaded machine wall time mostly measures the others.
  const c0 = process.cpuUsage();
  const hyps: Hypothesis[][][] = [];
  for (const part of parts)
    hyps.push(await generate(rt.stepModel, await rt.encode(part), part.length, { beam, minLen: len, maxLen: len }));
  const c = process.cpuUsage(c0);
  return { ms: (c.user + c.system) / 1000, hyps };
}

const modes = selectModes(
  args.modes,
  DECODE_MODES.map((m) => m.name),
);
if (args.save) {
  const m = await writeBenchModel(args.save, opts);
  console.log(m.dir);
} else if (args.vs) {
  const root = await mkdtemp(join(tmpdir(), 'frost-t-decode-'));
  try {
    const mine = args.new ?? (await writeBenchModel(root, opts)).dir;
    const [base, rt] = [
      await loadModelDir(args.vs, { intraOpNumThreads: 1 }),
      await loadModelDir(mine, { intraOpNumThreads: 1 }),
    ];
    console.log(
      `| mode | base ms/sent | new ms/sent | base / new |  (load ${loadavg()[0]!.toFixed(1)})\n|---|---:|---:|---:|`,
    );
    for (const mode of modes) {
      const parts = chunks(sources(mode.sentences), mode.batch);
      const a0 = await decode(base, parts, mode.beam);
      const b0 = await decode(rt, parts, mode.beam);
      const same =
        JSON.stringify(a0.hyps.map((c) => c.map((h) => h.map((x) => x.tokens)))) ===
        JSON.stringify(b0.hyps.map((c) => c.map((h) => h.map((x) => x.tokens))));
      const [a, b]: number[][] = [[], []];
      for (let r = 0; r < Number(args.rounds); r++) {
        if (r % 2 === 0) a.push((await decode(base, parts, mode.beam)).ms);
        b.push((await decode(rt, parts, mode.beam)).ms);
        if (r % 2 === 1) a.push((await decode(base, parts, mode.beam)).ms);
      }
      console.log(
        `| ${mode.name} | ${(median(a) / mode.sentences).toFixed(2)} | ${(median(b) / mode.sentences).toFixed(2)} | ` +
          `${median(a.map((x, i) => x / b[i]!)).toFixed(3)}× |${same ? '' : ' TOKENS DIFFER'}`,
      );
    }
    await base.release();
    await rt.release();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
} else if (args['pool-ab']) {
  const root = await mkdtemp(join(tmpdir(), 'frost-t-pool-'));
  try {
    const mine = await writeBenchModel(root, opts);
    const [without, pooled] = [
      await loadModelDir(mine.dir, { intraOpNumThreads: 1 }),
      await loadModelDir(mine.dir, { intraOpNumThreads: 1 }),
    ];
    // The runtime's pool is private: a bound of 0 bytes makes it keep nothing, as if there were none.
    (without as unknown as { buffers: BufferPool }).buffers = new BufferPool(0);
    console.log(
      `| mode | no pool ms/sent | pool ms/sent | no pool / pool |  (load ${loadavg()[0]!.toFixed(1)})\n|---|---:|---:|---:|`,
    );
    for (const mode of modes) {
      const parts = chunks(sources(mode.sentences), mode.batch);
      await decode(without, parts, mode.beam);
      await decode(pooled, parts, mode.beam);
      const [a, b]: number[][] = [[], []];
      for (let r = 0; r < Number(args.rounds); r++) {
        if (r % 2 === 0) a.push((await decode(without, parts, mode.beam)).ms);
        b.push((await decode(pooled, parts, mode.beam)).ms);
        if (r % 2 === 1) a.push((await decode(without, parts, mode.beam)).ms);
      }
      console.log(
        `| ${mode.name} | ${(median(a) / mode.sentences).toFixed(2)} | ${(median(b) / mode.sentences).toFixed(2)} | ` +
          `${median(a.map((x, i) => x / b[i]!)).toFixed(3)}× |`,
      );
    }
    await without.release();
    await pooled.release();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
} else if (args.split) {
  const root = await mkdtemp(join(tmpdir(), 'frost-t-split-'));
  try {
    const mine = await writeBenchModel(root, opts);
    const ms = { encoder: 0, decoder: 0, reorder: 0, step: 0 };
    const rt = await Seq2SeqRuntime.create({
      ort,
      card: mine.card,
      graphs: (file) => readFile(join(mine.dir, file)),
      createSession: async (bytes, role) => {
        const s = await createNodeSession(bytes, { intraOpNumThreads: 1 });
        const run = s.run.bind(s) as (...a: unknown[]) => ReturnType<InferenceSession['run']>;
        const key = role === 'encoder' ? 'encoder' : 'decoder';
        (s as { run: unknown }).run = async (...a: unknown[]) => {
          const t0 = performance.now();
          const out = await run(...a);
          ms[key] += performance.now() - t0;
          return out;
        };
        return s;
      },
    });
    const sm = rt.stepModel as { reorder: typeof rt.stepModel.reorder; stepTop?: typeof rt.stepModel.stepTop };
    const [reorder, stepTop] = [sm.reorder, sm.stepTop!];
    sm.reorder = (s, order) => {
      const t0 = performance.now();
      const out = reorder(s, order);
      ms.reorder += performance.now() - t0;
      return out;
    };
    sm.stepTop = async (prev, s) => {
      const t0 = performance.now();
      const out = await stepTop(prev, s);
      ms.step += performance.now() - t0;
      return out;
    };
    console.log(
      `| mode | ms/sent | encoder run | decoder run | reorders | rest of the steps | search, GC |  (load ${loadavg()[0]!.toFixed(1)})\n|---|---:|---:|---:|---:|---:|---:|`,
    );
    for (const mode of modes) {
      const parts = chunks(sources(mode.sentences), mode.batch);
      const rounds: number[][] = [];
      for (let r = 0; r <= Number(args.rounds); r++) {
        for (const k of Object.keys(ms) as (keyof typeof ms)[]) ms[k] = 0;
        const t0 = performance.now();
        for (const part of parts)
          await generate(rt.stepModel, await rt.encode(part), part.length, {
            beam: mode.beam,
            minLen: len,
            maxLen: len,
          });
        const wall = performance.now() - t0;
        const rest = ms.step - ms.decoder;
        // Round 0 warms up.
        if (r > 0)
          rounds.push([wall, ms.encoder, ms.decoder, ms.reorder, rest, wall - ms.encoder - ms.step - ms.reorder]);
      }
      const cells = rounds[0]!.map((_, c) => (median(rounds.map((x) => x[c]!)) / mode.sentences).toFixed(2));
      console.log(`| ${mode.name} | ${cells.join(' | ')} |`);
    }
    await rt.release();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
} else if (args.profile) {
  const root = await mkdtemp(join(tmpdir(), 'frost-t-profile-'));
  try {
    const mine = await writeBenchModel(root, opts);
    for (const mode of modes) {
      const prefix = join(root, `prof-${mode.batch}-${mode.beam}`);
      const sessions: InferenceSession[] = [];
      const rt = await Seq2SeqRuntime.create({
        ort,
        card: mine.card,
        graphs: (file) => readFile(join(mine.dir, file)),
        createSession: async (bytes, role) => {
          const s = await createNodeSession(bytes, {
            intraOpNumThreads: 1,
            ...(role === args.role && { profileFilePrefix: prefix }),
          });
          if (role === args.role) sessions.push(s);
          return s;
        },
      });
      const parts = chunks(sources(mode.sentences), mode.batch);
      await decode(rt, parts, mode.beam);
      const t0 = performance.now();
      await decode(rt, parts, mode.beam);
      const wall = performance.now() - t0;
      for (const s of sessions) s.endProfiling();
      await rt.release();
      const files = (await readdir(root)).filter((f) => f.startsWith(`prof-${mode.batch}-${mode.beam}`));
      console.log(`\n${mode.name}: decode ${wall.toFixed(0)} ms (profiled); load ${loadavg()[0]!.toFixed(1)}`);
      for (const f of files) {
        const events = JSON.parse(await readFile(join(root, f), 'utf8')) as {
          cat: string;
          name: string;
          dur: number;
          args?: { op_name?: string };
        }[];
        const ops = new Map<string, number>();
        let runs = 0;
        let kernels = 0;
        let nRuns = 0;
        for (const e of events) {
          if (e.cat === 'Session' && e.name === 'model_run') {
            runs += e.dur;
            nRuns++;
          }
          if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
          const k = process.env.BY_NODE
            ? `${e.args?.op_name} ${e.name.replace(/_kernel_time$/, '')}`
            : (e.args?.op_name ?? '?');
          ops.set(k, (ops.get(k) ?? 0) + e.dur);
          kernels += e.dur;
        }
        console.log(
          `  ${f}: ${nRuns} runs, ${(runs / nRuns / 1000).toFixed(2)} ms/run, kernels ${((100 * kernels) / runs).toFixed(0)}% of run`,
        );
        for (const [k, v] of [...ops].sort((x, y) => y[1] - x[1]).slice(0, Number(process.env.TOP ?? 16)))
          console.log(
            `    ${((100 * v) / kernels).toFixed(1).padStart(5)}%  ${(v / nRuns / 1000).toFixed(3)} ms/run  ${k}`,
          );
      }
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
