/**
 * What the compact output layer saves (models/heads/compact-output.ts): training updates per second and the
 * onnxruntime decoder step of the same model with a masked output layer (all |V| rows scored, the excluded then
 * pinned) and a compact one (only the K kept rows), side by side in one process.
 *
 *   FROST_WASM_THREADS=1 FROST_NATIVE_GEMM_THREADS=1 npm run bench:compact-output
 *   node --import tsx bench/compact-output.ts --head tied --vocab-size 8000 --steps 20 --rounds 2
 *
 * The run config is `frost train`'s for `--arch rnn-attn --preset small --vocab bpe --joint-vocab` on Multi30k
 * de→en; the subword model is learned once, then each round trains a fresh model of each layout for --warmup +
 * --steps updates on the same batches (masked first in odd rounds, compact first in even ones, so a burst of load
 * on a shared machine hits both) and times the measured updates. Then both models are exported (untrained weights:
 * the timing does not depend on them) and their decoder steps timed alternately on one onnxruntime thread, for
 * --decode-rows rows after a batch of sources. Prints per-round and pooled ratios; asserts no time.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs-core';
import { newRunConfig } from '../clients/cli/commands/train-config.ts';
import { createNodeSession, ort } from '../core/runtime/ort-node.ts';
import { buildModel, type ModelSizes, type Seq2SeqModel } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { makeBatch, planBatches } from '../train/data/batches.ts';
import { multi30kDir } from '../train/data/paths.ts';
import { Adam } from '../train/optim/adam.ts';
import { outputLayerSizes } from '../train/output-support.ts';
import { prepareData } from '../train/prepare-data.ts';
import type { TranslationRunConfig } from '../train/run-config.ts';

const { values: args } = parseArgs({
  options: {
    data: { type: 'string' },
    src: { type: 'string', default: 'de' },
    tgt: { type: 'string', default: 'en' },
    head: { type: 'string', default: 'fixed-l2' },
    preset: { type: 'string', default: 'small' },
    'vocab-size': { type: 'string', default: '8000' },
    steps: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2' },
    'decode-rows': { type: 'string', default: '64' },
    'decode-steps': { type: 'string', default: '50' },
  },
});
const STEPS = Number(args.steps);
const WARMUP = Number(args.warmup);
const ROUNDS = Number(args.rounds);

type Layout = 'masked' | 'compact';

/**
 * Wall and CPU seconds of `fn`. CPU time (this process's threads: one wasm thread and one GEMM thread here) is the
 * steadier figure on a machine other jobs share: a side that waits for a core loses wall time, not CPU time.
 */
interface Timing {
  wall: number;
  cpu: number;
}

function timed(fn: () => void): Timing {
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  fn();
  const cpu = process.cpuUsage(cpu0);
  return { wall: (performance.now() - start) / 1000, cpu: (cpu.user + cpu.system) / 1e6 };
}

async function main(): Promise<void> {
  const backend = await initBackend({ quiet: true });
  const runDir = await mkdtemp(join(tmpdir(), 'frost-bench-compact-'));
  try {
    const config = (await newRunConfig(
      {
        task: 'translation',
        arch: 'rnn-attn',
        head: args.head!,
        data: args.data ?? multi30kDir(),
        src: args.src,
        tgt: args.tgt,
        preset: args.preset,
        set: {},
        headOption: {},
        seed: 1,
        vocab: 'bpe',
        vocabSize: Number(args['vocab-size']),
        jointVocab: true,
      },
      runDir,
    )) as TranslationRunConfig;
    const t0 = performance.now();
    const data = await prepareData(config, runDir, false);
    const output = outputLayerSizes(config, data.tgtVocab);
    const V = data.tgtVocab.size;
    const K = V - (output.excludedTargets?.length ?? 0);
    console.log(
      `${args.src}→${args.tgt} joint BPE ${V} pieces, ${K} kept (${((performance.now() - t0) / 1000).toFixed(1)} s to prepare); ` +
        `${args.preset} rnn-attn, head ${args.head}, backend ${backend.name}`,
    );
    const plan = planBatches(
      data.train,
      { seed: 1, maxSentences: config.batch.maxSentences, maxTokens: config.batch.maxTokens },
      1,
    );
    const batches = plan.slice(0, WARMUP + STEPS).map((p) => makeBatch(data.train, p));
    const tokens = batches.slice(WARMUP).reduce((n, b) => n + b.tokens, 0);
    const sizes = (layout: Layout): ModelSizes => ({
      srcVocab: data.srcVocab.size,
      tgtVocab: V,
      jointEmbedding: true,
      excludedTargets: output.excludedTargets,
      compactOutput: layout === 'compact',
    });
    const build = (layout: Layout): Seq2SeqModel =>
      buildModel('rnn-attn', config.archConfig, sizes(layout), config.head, config.seed);

    /** Wall and CPU seconds for the measured updates of a fresh model. */
    const trainSeconds = (layout: Layout): Timing => {
      const model = build(layout);
      const adam = new Adam(model.params.learnable, { clipNorm: config.optim.clipNorm });
      const step = (i: number) => {
        const b = batches[i]!;
        adam.minimize(() => tf.div(model.lossSum(b, true), b.tokens) as tf.Scalar);
      };
      for (let i = 0; i < WARMUP; i++) step(i);
      const timing = timed(() => {
        for (let i = WARMUP; i < WARMUP + STEPS; i++) step(i);
      });
      adam.dispose();
      model.params.dispose();
      return timing;
    };

    console.log(`\ntraining: ${STEPS} updates after ${WARMUP} warm-up, ${tokens} target tokens`);
    const totals = { masked: { wall: 0, cpu: 0 }, compact: { wall: 0, cpu: 0 } };
    for (let r = 1; r <= ROUNDS; r++) {
      const order: Layout[] = r % 2 === 1 ? ['masked', 'compact'] : ['compact', 'masked'];
      const t = {} as Record<Layout, Timing>;
      for (const layout of order) t[layout] = trainSeconds(layout);
      for (const layout of order) {
        totals[layout].wall += t[layout].wall;
        totals[layout].cpu += t[layout].cpu;
      }
      const rate = (x: number) => (STEPS / x).toFixed(3);
      console.log(
        `  round ${r} (${order.join(' then ')}): updates/s masked ${rate(t.masked.wall)}, compact ${rate(t.compact.wall)} ` +
          `(ratio ${(t.masked.wall / t.compact.wall).toFixed(3)}); per CPU second masked ${rate(t.masked.cpu)}, ` +
          `compact ${rate(t.compact.cpu)} (ratio ${(t.masked.cpu / t.compact.cpu).toFixed(3)})`,
      );
    }
    console.log(
      `  pooled compact/masked: updates per second ${(totals.masked.wall / totals.compact.wall).toFixed(3)}, ` +
        `updates per CPU second ${(totals.masked.cpu / totals.compact.cpu).toFixed(3)}`,
    );

    await decodeSteps(build, data.srcVocab.size);
  } finally {
    await rm(runDir, { recursive: true, force: true });
  }
}

/** Decoder step time in onnxruntime (one thread), masked against compact, alternately. */
async function decodeSteps(build: (layout: Layout) => Seq2SeqModel, srcVocab: number): Promise<void> {
  const rows = Number(args['decode-rows']);
  const steps = Number(args['decode-steps']);
  const sessions = {} as Record<Layout, { encoder: ort.InferenceSession; decoder: ort.InferenceSession }>;
  for (const layout of ['masked', 'compact'] as const) {
    const model = build(layout);
    const { encoder, decoder } = model.toOnnx({});
    sessions[layout] = {
      encoder: await createNodeSession(encoder.toBytes(), { intraOpNumThreads: 1 }),
      decoder: await createNodeSession(decoder.toBytes(), { intraOpNumThreads: 1 }),
    };
    model.params.dispose();
  }
  const S = 14;
  const src = BigInt64Array.from({ length: rows * S }, (_, i) => BigInt(4 + ((i * 7919) % (srcVocab - 4))));
  const feeds = {
    src_ids: new ort.Tensor('int64', src, [rows, S]),
    src_lengths: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: rows }, () => BigInt(S)),
      [rows],
    ),
  };
  const prev = new ort.Tensor(
    'int64',
    BigInt64Array.from({ length: rows }, (_, i) => BigInt(4 + i)),
    [rows],
  );
  const memory = {} as Record<Layout, Record<string, ort.Tensor>>;
  for (const layout of ['masked', 'compact'] as const) memory[layout] = await sessions[layout].encoder.run(feeds);
  const stepMs = async (layout: Layout): Promise<Timing> => {
    const { decoder } = sessions[layout];
    const m = memory[layout];
    const inputs = Object.fromEntries(decoder.inputNames.map((n) => [n, n === 'prev_token' ? prev : m[n]!]));
    await decoder.run(inputs);
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < steps; i++) await decoder.run(inputs);
    const cpu = process.cpuUsage(cpu0);
    return { wall: (performance.now() - start) / steps, cpu: (cpu.user + cpu.system) / 1000 / steps };
  };
  console.log(`\nonnxruntime decoder step, ${rows} rows, 1 thread, ${steps} steps per side per round`);
  const totals = { masked: { wall: 0, cpu: 0 }, compact: { wall: 0, cpu: 0 } };
  for (let r = 1; r <= 2 * ROUNDS; r++) {
    const order: Layout[] = r % 2 === 1 ? ['masked', 'compact'] : ['compact', 'masked'];
    const t = {} as Record<Layout, Timing>;
    for (const layout of order) t[layout] = await stepMs(layout);
    for (const layout of order) {
      totals[layout].wall += t[layout].wall;
      totals[layout].cpu += t[layout].cpu;
    }
    console.log(
      `  round ${r}: wall masked ${t.masked.wall.toFixed(2)} ms, compact ${t.compact.wall.toFixed(2)} ms ` +
        `(ratio ${(t.masked.wall / t.compact.wall).toFixed(3)}); CPU masked ${t.masked.cpu.toFixed(2)} ms, ` +
        `compact ${t.compact.cpu.toFixed(2)} ms (ratio ${(t.masked.cpu / t.compact.cpu).toFixed(3)})`,
    );
  }
  console.log(
    `  pooled masked/compact step time: wall ${(totals.masked.wall / totals.compact.wall).toFixed(3)}, ` +
      `CPU ${(totals.masked.cpu / totals.compact.cpu).toFixed(3)}`,
  );
  for (const s of Object.values(sessions)) {
    await s.encoder.release();
    await s.decoder.release();
  }
}

await main();
