/**
 * Training speed of rnn-attn (or --arch: any translation architecture of the registry) on Multi30k, frost vs PyTorch
 * on the same CPU, the same batches.
 *
 *   npm run bench:train
 *   npm run bench:train -- --arch transformer --heads learned,shared-l2
 *   npm run bench:train -- --steps 20 --heads learned,fixed-l2 --threads 1,2 --gemm blas,mlas,xnnpack --rounds 3
 *
 * What it does, in one run so that both sides share the machine's noise:
 *  1. prepares the batches once (bench/train-speed-data.ts: Multi30k de→en, word vocabularies with
 *     min frequency 2, 64 sentences a batch; for the Transformer its recipe's: one joint vocabulary with the
 *     source and target embedding shared, token-based batches of ≤ 4096 padded tokens (--max-tokens), label
 *     smoothing 0.1, no clipping, Adam β₂ 0.98) and writes them to a file both sides read;
 *  2. per output head and thread count, --rounds times: a frost child process (this file with
 *     --worker) trains the `small` preset for --warmup + --steps steps, and the PyTorch peer
 *     (bench/peer/<arch>.py, e.g. bench/peer/rnn_attn.py, when one is written; Debian's python3-torch,
 *     when `/usr/bin/python3 -c "import torch"` works) the same steps; frost first in odd rounds,
 *     PyTorch first in even ones, so that a burst of load on this shared machine hits both sides,
 *     and each round's ratio is printed;
 *     --gemm picks what runs frost's large GEMMs: native (per shape class, the probe's choice), blas,
 *     mlas or xnnpack (train/backend/kernels/native-gemm.ts); frost's decoder skips target padding
 *     (models/packed-steps.ts), the peer's computes it as PyTorch NMT code usually does, or, with
 *     --peer-targets packed, skips it too; the lightconv/dynamicconv peer runs fairseq's band-matrix
 *     convolution, or with FROST_PEER_CONV=unfold in the environment its unfolded one;
 *  3. each frost child then trains the tiny preset for --leak-steps steps on the same batches and
 *     checks that the tensor count did not grow (and the small preset's measured steps too);
 *  4. prints a Markdown table, and writes results.json and results.md under --out.
 *
 * Where each frost step's time goes (bench/step-phases.ts, bench/step-phase-report.ts): the measured steps' phases
 * (data, forward, backward, optimizer, other) are timed at their boundaries only, which costs them nothing measurable;
 * then --phase-steps more steps (default 2, 0: none) on the first measured steps' batches run with every kernel timed,
 * for each phase's GEMM share and the non-GEMM kernels that cost most. Those run after the measured steps, so the
 * tokens/s figures never include the kernel timers; the report prints one table per frost configuration.
 *
 * The machine's true GEMM peak (issue #52): before the rounds a child (this file with --peak) times the best large
 * square product through every runner frost can use (each native provider of gemm-providers.ts as the environment
 * configures it, and XNNPACK) and names the fastest; the report prints it beside the CPU's ISA (AVX2, AVX-512, VNNI)
 * and the kernels each side's BLAS reports (openblas_get_corename through frost's FFI and through the peer's ctypes;
 * torch.__config__.show()'s BLAS lines). The peer runs PyTorch as its users run it: OpenBLAS on the CPU's own
 * kernels, OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from its environment only (an image may pin them to
 * older kernels); --peer-env image keeps them, to reproduce figures taken before. frost's environment is left as
 * it is: its per-shape probe (train/backend/kernels/gemm-probe.ts) picks the fastest runner per product.
 *
 * Figures: target tokens/s = Σ tokens / Σ step time over the measured steps; step time median and
 * p90; CPU seconds per step (all threads of the process: on a shared machine the share of the
 * CPU a side got is visible as CPU/wall); peak RSS and, for frost, the wasm heap's size; GEMM
 * FLOPs per step counted from the MatMul kernels frost ran (2·M·N·K), with the output layer's share
 * (products with a |V|-sized dimension); from those, multiply-adds per target token and the share of the machine's
 * GEMM peak the step achieved (the peak: the best large square tf.matMul in the same worker, so the same provider and
 * threads), the distance to the limit as a number. frost/PyTorch compares tokens/s of the same head in the
 * same run, pooled over the rounds (Σ tokens / Σ step time of each side). Nothing here asserts a
 * time: the machine is shared and times are what they were.
 */
import '@tensorflow/tfjs';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs-core';
import { buildModel, getArch, resolveArchConfig } from '../models/index.ts';
import { initBackend, type BackendInfo } from '../train/backend/select.ts';
import { GEMM_PROVIDERS } from '../train/backend/kernels/gemm-providers.ts';
import { choiceSummary, cpuIsa, type GemmChoiceRecord } from '../train/backend/kernels/gemm-probe.ts';
import { nativeGemm, setNativeGemm } from '../train/backend/kernels/native-gemm.ts';
import { transposeCache } from '../train/backend/kernels/transpose.ts';
import { asWasmBackend } from '../train/backend/kernels/wasm-internals.ts';
import { REPO_ROOT } from '../train/data/paths.ts';
import { Adam } from '../train/optim/adam.ts';
import { IMAGE_BLAS_ENV } from './blas-env.ts';
import { archHelp, archsReading, DEFAULT_BENCH_ARCH, jointByDefault, pickArchs, trainPeerScript } from './archs.ts';
import { timeKernels } from './kernel-timers.ts';
import { mergeStepPhases, stepPhaseLines, type StepPhases } from './step-phase-report.ts';
import { StepPhaseRecorder } from './step-phases.ts';
import { prepareBenchData, readBenchData, writeBenchData, type BenchData } from './train-speed-data.ts';

const USAGE = `
npm run bench:train [-- --arch A] [--heads learned,tied,fixed-l2,hadamard,drill] [--steps 10] [--warmup 2]
                    [--rounds 4] [--threads 2] [--gemm native|blas|mlas|xnnpack,...] [--preset small]
                    [--max-tokens N] [--joint auto|on|off] [--batch N] [--peer auto|on|off]
                    [--peer-targets padded|packed] [--peer-env native|image] [--phase-steps 2]
                    [--out reports/train-speed]`;

const { values: args } = parseArgs({
  options: {
    heads: { type: 'string', default: 'learned,tied,fixed-l2,hadamard,drill' },
    steps: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    threads: { type: 'string', default: '2' },
    gemm: { type: 'string', default: 'native' },
    'wasm-threads': { type: 'string', default: '1' },
    'leak-steps': { type: 'string', default: '200' },
    rounds: { type: 'string', default: '4' },
    arch: { type: 'string', default: DEFAULT_BENCH_ARCH },
    /** Token-based batches (padded tokens per batch); default: the architecture recipe's (the Transformer's 4096). */
    'max-tokens': { type: 'string' },
    /** One joint vocabulary, source and target embedding shared: on by default for the Transformer. */
    joint: { type: 'string', default: 'auto' },
    preset: { type: 'string', default: 'small' },
    /** Most sentences per batch: 64, or no cap with token-based batches (--max-tokens, the Transformer's recipe). */
    batch: { type: 'string' },
    data: { type: 'string', default: 'multi30k' },
    src: { type: 'string', default: 'de' },
    tgt: { type: 'string', default: 'en' },
    peer: { type: 'string', default: 'auto' },
    'peer-targets': { type: 'string', default: 'padded' },
    /** native: the peer's OpenBLAS on the CPU's own kernels (OPENBLAS_CORETYPE/L2_SIZE unset for it); image: as set. */
    'peer-env': { type: 'string', default: 'native' },
    python: { type: 'string', default: '/usr/bin/python3' },
    out: { type: 'string', default: 'reports/train-speed' },
    seed: { type: 'string', default: '1' },
    /** Steps after the measured ones with every kernel timed, for the phase table's GEMM and kernel columns. */
    'phase-steps': { type: 'string', default: '2' },
    // worker mode (one frost measurement in a child process)
    worker: { type: 'boolean', default: false },
    /** worker mode: the GEMM peak of every runner instead of training. */
    peak: { type: 'boolean', default: false },
    batches: { type: 'string' },
    head: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(archHelp(USAGE, '--arch', archsReading('tokens')));
  process.exit(0);
}

const STEPS = Number(args.steps);
const WARMUP = Number(args.warmup);
const LEAK_STEPS = Number(args['leak-steps']);
const PHASE_STEPS = Math.max(0, Math.floor(Number(args['phase-steps'])));
const ROUNDS = Math.max(1, Math.floor(Number(args.rounds)));
const GEMMS = ['native', 'blas', 'mlas', 'xnnpack'] as const;
/** How the peer's decoder treats target padding (frost's skips it: models/packed-steps.ts). */
const PEER_TARGETS: Record<string, string> = {
  padded: 'its decoder computing every padded target position, as PyTorch NMT code usually does (frost skips them)',
  packed: 'its decoder skipping target padding as frost does (--peer-targets packed)',
};
if (args.arch!.includes(',')) throw new Error(`--arch takes one architecture; got '${args.arch}'`);
const [ARCH] = pickArchs(args.arch, archsReading('tokens')) as [string];
/** The architecture's PyTorch peer; without one, frost is measured alone. */
const PEER_SCRIPT = trainPeerScript(ARCH);
/**
 * What the architecture's training recipe fixes that costs time, applied on both sides: label smoothing, gradient
 * clipping (the norm is a pass over every gradient), Adam's β (no cost, kept for sameness), token-based batches.
 */
const RECIPE = getArch(ARCH).recipe ?? {};
const LABEL_SMOOTHING = RECIPE.labelSmoothing ?? 0;
const CLIP_NORM = RECIPE.clipNorm ?? 5;
const MAX_TOKENS = args['max-tokens'] != null ? Number(args['max-tokens']) : RECIPE.maxTokens;
if (!['auto', 'on', 'off'].includes(args.joint!)) throw new Error(`--joint takes auto, on or off; got '${args.joint}'`);
const JOINT = args.joint === 'auto' ? jointByDefault(ARCH) : args.joint === 'on';
const BATCH = args.batch != null ? Number(args.batch) : MAX_TOKENS != null ? Infinity : 64;
const BATCH_LABEL = [
  ...(BATCH < Infinity ? [`≤ ${BATCH} sentences`] : []),
  ...(MAX_TOKENS != null ? [`≤ ${MAX_TOKENS} padded tokens`] : []),
].join(', ');
// A convolutional decoder has no steps to skip: the whole target runs as one tensor on both sides.
if (ARCH === 'convs2s' && args['peer-targets'] !== 'padded')
  throw new Error('--peer-targets packed is not for convs2s: frost scores its every padded target position too');
if (!['native', 'image'].includes(args['peer-env']!))
  throw new Error(`--peer-env takes native or image; got '${args['peer-env']}'`);
if (!(args['peer-targets']! in PEER_TARGETS))
  throw new Error(`--peer-targets takes ${Object.keys(PEER_TARGETS).join(' or ')}; got '${args['peer-targets']}'`);

/** One side's measurement of one head (what a frost worker or the peer prints as JSON). */
interface SideResult {
  side: 'frost' | 'pytorch';
  head: string;
  threads: number;
  stepSeconds: number[];
  tokens: number[];
  losses: number[];
  cpuSeconds: number;
  peakRssBytes: number;
  learnable: number;
  frozen: number;
  // frost only
  backend?: string;
  gemm?: string;
  wasmThreads?: number;
  wasmHeapBytes?: number;
  tensorGrowth?: number;
  dataIdGrowth?: number;
  leak?: { preset: string; steps: number; tensorGrowth: number; dataIdGrowth: number; seconds: number };
  flops?: { total: number; outputLayer: number; tokens: number };
  /** Where the steps' time went: phases, and with --phase-steps their GEMM share and top kernels. */
  phases?: StepPhases;
  /** The best rate of one large square product through the same GEMM, in the same process after the steps. */
  gemmPeak?: { flopsPerSecond: number; shape: string };
  /** frost: the kernels its BLAS reports ('OpenBLAS core Haswell'); with the probe, which runner took how many. */
  gemmKernel?: string;
  gemmChoice?: string;
  // pytorch only
  torch?: string;
  blas?: string[];
  blasConfig?: string;
  /** torch.__config__.show()'s BLAS and LAPACK lines. */
  blasConfigLines?: string[];
  /** openblas_get_corename / openblas_get_config of the OpenBLAS torch loaded (ctypes), and its path. */
  blasCorename?: string;
  openblasConfig?: string;
  openblasLibrary?: string;
  /** The OPENBLAS_* variables the peer ran with. */
  openblasEnv?: Record<string, string>;
  /** How the peer ran its convolutions (bench/peer/lightconv.py: 'dynamic expanded', FROST_PEER_CONV picks). */
  conv?: string;
  error?: string;
  /** Share of all CPU time the hypervisor stole while this side ran (Linux guests). */
  stealShare?: number;
}

/**
 * One side's rounds as one result: their steps end to end, CPU seconds added, the peaks' maximum;
 * leak figures from the round that ran the check. A failed round makes the whole result failed.
 */
function pooled(rounds: SideResult[]): SideResult {
  const failed = rounds.find((r) => r.error != null);
  if (failed != null || rounds.length === 0) return failed ?? ({ error: 'no rounds ran' } as SideResult);
  const growth = (k: 'tensorGrowth' | 'dataIdGrowth') =>
    rounds.some((r) => r[k] != null) ? Math.max(...rounds.map((r) => r[k] ?? 0)) : undefined;
  return {
    ...rounds[0],
    stepSeconds: rounds.flatMap((r) => r.stepSeconds),
    tokens: rounds.flatMap((r) => r.tokens),
    losses: rounds.flatMap((r) => r.losses),
    cpuSeconds: sum(rounds.map((r) => r.cpuSeconds)),
    peakRssBytes: Math.max(...rounds.map((r) => r.peakRssBytes)),
    wasmHeapBytes: rounds[0].wasmHeapBytes == null ? undefined : Math.max(...rounds.map((r) => r.wasmHeapBytes ?? 0)),
    tensorGrowth: growth('tensorGrowth'),
    dataIdGrowth: growth('dataIdGrowth'),
    leak: rounds.find((r) => r.leak != null)?.leak,
    phases: mergeStepPhases(rounds.flatMap((r) => (r.phases != null ? [r.phases] : []))),
    gemmPeak: rounds
      .flatMap((r) => (r.gemmPeak == null ? [] : [r.gemmPeak]))
      .reduce<SideResult['gemmPeak']>(
        (best, p) => (best == null || p.flopsPerSecond > best.flopsPerSecond ? p : best),
        undefined,
      ),
    stealShare: rounds.some((r) => r.stealShare != null)
      ? Math.max(...rounds.map((r) => r.stealShare ?? 0))
      : undefined,
  };
}

/** What ran frost's large GEMMs: 'probe 2T (mlas 15, blas 6, xnnpack 3)', 'OpenBLAS 2T', 'MLAS 2T', 'XNNPACK, 1T'. */
function gemmLabel(r: SideResult): string {
  if (r.gemm == null || r.gemm.startsWith('XNNPACK')) return `XNNPACK, ${r.wasmThreads ?? r.threads}T`;
  if (r.gemm.startsWith('per shape class')) return `probe ${r.threads}T${r.gemmChoice ? ` (${r.gemmChoice})` : ''}`;
  if (r.gemm.startsWith('BLAS ')) return `${r.gemm.split(' ')[1]} ${r.threads}T`;
  return `MLAS ${r.threads}T`;
}

const median = (xs: number[]) => quantile(xs, 0.5);
function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

// ---------------------------------------------------------------------------------------------
// worker: one frost head, one thread setting
// ---------------------------------------------------------------------------------------------

/** Counts 2·M·N·K of every MatMul kernel run inside fn; `isOutput` picks the output layer's. */
function countMatMulFlops(fn: () => void, vocab: number): { total: number; outputLayer: number } {
  let total = 0;
  let outputLayer = 0;
  const timers = timeKernels(({ kernelName, inputs, attrs }) => {
    if (kernelName !== 'BatchMatMul' && kernelName !== '_FusedMatMul') return;
    const { a: x, b: y } = inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
    const { transposeA = false, transposeB = false } = attrs as { transposeA?: boolean; transposeB?: boolean };
    const rx = x.shape.length;
    const ry = y.shape.length;
    const M = transposeA ? x.shape[rx - 1] : x.shape[rx - 2];
    const K = transposeA ? x.shape[rx - 2] : x.shape[rx - 1];
    const N = transposeB ? y.shape[ry - 2] : y.shape[ry - 1];
    const batch = Math.max(
      x.shape.slice(0, -2).reduce((p, n) => p * n, 1),
      y.shape.slice(0, -2).reduce((p, n) => p * n, 1),
    );
    const flops = 2 * batch * M * N * K;
    total += flops;
    if (M === vocab || N === vocab || K === vocab) outputLayer += flops;
  });
  try {
    fn();
  } finally {
    timers.restore();
  }
  return { total, outputLayer };
}

/**
 * This machine's GEMM peak as training reaches it: the best of a few [n×n]·[n×n] products through tf.matMul, i.e.
 * the same kernel, provider and thread count as the steps just measured (a large square product is as close to a
 * GEMM's peak as a library gets; the step's products are thinner).
 */
function measureGemmPeak(n = 1024, reps = 6): { flopsPerSecond: number; shape: string } {
  const a = tf.randomUniform([n, n], -1, 1, 'float32', 3);
  const b = tf.randomUniform([n, n], -1, 1, 'float32', 4);
  let best = Infinity;
  for (let i = 0; i <= reps; i++) {
    const t0 = performance.now();
    const y = tf.matMul(a, b);
    y.dataSync();
    const ms = performance.now() - t0;
    y.dispose();
    if (i > 0) best = Math.min(best, ms); // the first call packs or caches
  }
  tf.dispose([a, b]);
  return { flopsPerSecond: (2 * n ** 3) / (best / 1000), shape: `[${n}×${n}]·[${n}×${n}]` };
}

function wasmHeapBytes(): number | undefined {
  const b = tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array; wasmMemory?: WebAssembly.Memory } };
  const mem = b.wasm?.wasmMemory?.buffer ?? b.wasm?.HEAPU8?.buffer;
  return mem?.byteLength;
}

/** Backend data not owned by tensors, less the transposed weights the wasm kernels keep (TransposeCache). */
function dataIds(): number {
  const b = tf.backend() as unknown as { wasm?: unknown };
  const kept = b.wasm != null ? transposeCache(asWasmBackend(b)).size : 0;
  return tf.engine().backend.numDataIds() - kept;
}

/**
 * The measured steps' phases (`measured`, recorded as they ran), and PHASE_STEPS more steps with every kernel timed,
 * on the batches of the first measured steps (`stepSeconds`: those steps' times, to compare).
 */
function profileSteps(step: (i: number) => number, measured: StepPhaseRecorder, stepSeconds: number[]): StepPhases {
  const { steps, ms } = measured.totals();
  if (PHASE_STEPS === 0 || STEPS === 0) return { measured: { steps, ms } };
  const profiler = new StepPhaseRecorder({ kernels: true });
  let sameBatchesMeasuredMs = 0;
  for (let k = 0; k < PHASE_STEPS; k++) {
    profiler.step(() => step(WARMUP + (k % STEPS)));
    sameBatchesMeasuredMs += stepSeconds[k % STEPS] * 1000;
  }
  return { measured: { steps, ms }, profiled: { ...profiler.totals(), sameBatchesMeasuredMs } };
}

async function worker(): Promise<void> {
  const head = args.head!;
  const threads = Number(args.threads);
  const gemm = args.gemm!;
  const info: BackendInfo = await initBackend({
    quiet: true,
    wasmThreads: Number(args['wasm-threads']),
    nativeGemm: gemm === 'native' ? 'auto' : gemm === 'xnnpack' ? false : (gemm as 'blas' | 'mlas'),
  });
  const data = readBenchData(args.batches!, JOINT);
  const sizes = { srcVocab: data.srcVocab, tgtVocab: data.tgtVocab, ...(JOINT ? { jointEmbedding: true } : {}) };

  const train = (preset: string, count: number, onStep?: (i: number, seconds: number) => void) => {
    const model = buildModel(ARCH, resolveArchConfig(ARCH, preset), sizes, { name: head }, Number(args.seed));
    const adam = new Adam(model.params.learnable, {
      clipNorm: CLIP_NORM,
      ...(RECIPE.adamBetas ? { beta1: RECIPE.adamBetas[0], beta2: RECIPE.adamBetas[1] } : {}),
    });
    const loss = { labelSmoothing: LABEL_SMOOTHING };
    const step = (i: number) => {
      const b = data.batches[i % data.batches.length];
      return adam.minimize(() => tf.div(model.lossSum(b, true, loss), b.tokens) as tf.Scalar).loss;
    };
    return { model, adam, step, count, onStep };
  };

  // Small preset: warm-up (first step also counts the FLOPs), then the measured steps.
  const run = train(args.preset!, STEPS);
  let flops = { total: 0, outputLayer: 0, tokens: data.batches[0].tokens };
  for (let i = 0; i < WARMUP; i++) {
    if (i === 0) flops = { ...countMatMulFlops(() => run.step(0), data.tgtVocab), tokens: data.batches[0].tokens };
    else run.step(i);
  }
  const tensorsBefore = tf.memory().numTensors;
  const idsBefore = dataIds();
  const stepSeconds: number[] = [];
  const tokens: number[] = [];
  const losses: number[] = [];
  let heapPeak = wasmHeapBytes() ?? 0;
  const phases = new StepPhaseRecorder();
  const cpu0 = process.cpuUsage();
  for (let i = WARMUP; i < WARMUP + STEPS; i++) {
    const t0 = performance.now();
    losses.push(phases.step(() => run.step(i)));
    stepSeconds.push((performance.now() - t0) / 1000);
    tokens.push(data.batches[i % data.batches.length].tokens);
    heapPeak = Math.max(heapPeak, wasmHeapBytes() ?? 0);
  }
  const cpu = process.cpuUsage(cpu0);
  const tensorGrowth = tf.memory().numTensors - tensorsBefore;
  const dataIdGrowth = dataIds() - idsBefore;
  const stepPhases = profileSteps(run.step, phases, stepSeconds);
  const counts = run.model.params.counts();
  const gemmPeak = measureGemmPeak();
  run.adam.dispose();
  run.model.params.dispose();

  // Tiny preset, many steps: a leak shows as growth however small the model.
  let leak: SideResult['leak'];
  if (LEAK_STEPS > 0) {
    const tiny = train('tiny', LEAK_STEPS);
    tiny.step(0);
    const t0 = performance.now();
    const before = tf.memory().numTensors;
    const ids = dataIds();
    for (let i = 1; i <= LEAK_STEPS; i++) tiny.step(i);
    leak = {
      preset: 'tiny',
      steps: LEAK_STEPS,
      tensorGrowth: tf.memory().numTensors - before,
      dataIdGrowth: dataIds() - ids,
      seconds: (performance.now() - t0) / 1000,
    };
    tiny.adam.dispose();
    tiny.model.params.dispose();
  }

  const result: SideResult = {
    side: 'frost',
    head,
    threads: info.name === 'wasm' && gemm !== 'xnnpack' ? threads : (info.threads ?? 1),
    stepSeconds,
    tokens,
    losses,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    learnable: counts.learnable,
    frozen: counts.frozen,
    backend: info.name,
    gemm: info.gemm ?? info.package,
    ...(nativeGemm()?.kernel != null ? { gemmKernel: nativeGemm()!.kernel } : {}),
    ...(info.gemmChoice != null ? { gemmChoice: choiceSummary(info.gemmChoice) } : {}),
    wasmThreads: info.threads,
    wasmHeapBytes: heapPeak || undefined,
    tensorGrowth,
    dataIdGrowth,
    leak,
    phases: stepPhases,
    flops,
    gemmPeak,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** One runner's GEMM peak (the --peak worker). */
interface RunnerPeak {
  runner: string;
  description?: string;
  kernel?: string;
  flopsPerSecond?: number;
  shape?: string;
  error?: string;
}

/** The --peak worker's answer: every runner frost can use, at the same threads, and the environment it ran in. */
interface PeakReport {
  threads: number;
  runners: RunnerPeak[];
  env: Record<string, string>;
  /** frost's per-shape choice, probed afresh (FROST_GEMM_PROBE=refresh) for the workers that follow. */
  probe?: { summary: string; loadPerCore: number; classes: GemmChoiceRecord['classes'] };
  error?: string;
}

/**
 * The true GEMM peak: each native provider that loads (as the environment configures it: OPENBLAS_CORETYPE and the
 * like are frost's users' to set) and XNNPACK, the best of [1024³] and [2048³] products through tf.matMul (XNNPACK,
 * 5-20× slower, only [1024³]).
 */
async function peakWorker(): Promise<void> {
  const threads = Number(args.threads);
  const info = await initBackend({ quiet: true, wasmThreads: Number(args['wasm-threads']), nativeGemm: false });
  const runners: RunnerPeak[] = [];
  const best = (sizes: number[]) =>
    sizes.map((n) => measureGemmPeak(n, 4)).reduce((a, b) => (b.flopsPerSecond > a.flopsPerSecond ? b : a));
  for (const provider of GEMM_PROVIDERS) {
    const r = provider.load(threads);
    if (r instanceof Error) {
      runners.push({ runner: provider.name, error: r.message.split('\n')[0] });
      continue;
    }
    setNativeGemm({ ...r, minMacs: 0 });
    runners.push({ runner: provider.name, description: r.description, kernel: r.kernel, ...best([1024, 2048]) });
    setNativeGemm(null);
  }
  runners.push({ runner: 'xnnpack', description: `XNNPACK (wasm, ${info.threads ?? 1} thread)`, ...best([1024]) });
  // The per-shape choice the frost workers will read from the cache, measured now (runPeak sets FROST_GEMM_PROBE).
  const probed = await initBackend({ quiet: true, wasmThreads: Number(args['wasm-threads']), nativeGemm: 'auto' });
  const choice = probed.gemmChoice;
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => /^(OPENBLAS_|OMP_|GOMP_|FROST_BLAS$)/.test(k)),
  ) as Record<string, string>;
  const report: PeakReport = {
    threads,
    runners,
    env,
    ...(choice != null
      ? { probe: { summary: choiceSummary(choice), loadPerCore: choice.loadPerCore, classes: choice.classes } }
      : {}),
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

// ---------------------------------------------------------------------------------------------
// orchestrator
// ---------------------------------------------------------------------------------------------

/** CPU time the hypervisor gave to other guests ('steal', /proc/stat), and all CPU time, in jiffies; null off Linux. */
function cpuTimes(): { steal: number; total: number } | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { steal: fields[7] ?? 0, total: fields.reduce((a, b) => a + b, 0) };
  } catch {
    return null;
  }
}

/**
 * Runs one side and returns its result, with the share of the machine's CPU time stolen by the
 * host while it ran: on a VM, the noise no load average shows.
 */
async function runChild(
  cmd: string,
  argv: string[],
  env: Record<string, string>,
  unset: readonly string[] = [],
): Promise<SideResult> {
  const before = cpuTimes();
  const result = await runChildProcess(cmd, argv, env, unset);
  const after = cpuTimes();
  if (before != null && after != null && after.total > before.total)
    result.stealShare = (after.steal - before.steal) / (after.total - before.total);
  return result;
}

function runChildProcess(
  cmd: string,
  argv: string[],
  env: Record<string, string>,
  unset: readonly string[] = [],
): Promise<SideResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const name of unset) delete childEnv[name];
  return new Promise((resolvePromise) => {
    const child = spawn(cmd, argv, {
      cwd: REPO_ROOT,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('close', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      try {
        if (code !== 0) throw new Error(`exit ${code}`);
        resolvePromise(JSON.parse(last) as SideResult);
      } catch (e) {
        resolvePromise({ error: `${String(e)}: ${err.slice(-1500)}` } as SideResult);
      }
    });
  });
}

function peerAvailable(python: string): string | null {
  const r = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8', timeout: 60_000 });
  return r.status === 0 ? r.stdout.trim() : null;
}

const fmtInt = (n: number) => Math.round(n).toLocaleString('en');
const fmtMs = (s: number) => `${(s * 1000).toFixed(0)}`;
const fmtSteal = (r: SideResult) => (r.stealShare == null ? '' : `, steal ${(100 * r.stealShare).toFixed(1)}%`);
const fmtMiB = (b: number | undefined) => (b == null ? '–' : `${(b / 2 ** 20).toFixed(0)}`);
const tps = (r: SideResult) => sum(r.tokens) / sum(r.stepSeconds);
/** Tokens/s from the median step: robust to the multi-second stalls a shared host inflicts. */
const tpsMedian = (r: SideResult) => sum(r.tokens) / r.tokens.length / median(r.stepSeconds);

const log = (line: string) => process.stderr.write(`${line}\n`);
const stepLine = (r: SideResult) =>
  `${fmtInt(tps(r))} tok/s, median ${fmtMs(median(r.stepSeconds))} ms/step, CPU/wall ${(r.cpuSeconds / sum(r.stepSeconds)).toFixed(2)}${fmtSteal(r)}`;

/** The grid the orchestrator measures: heads × thread counts × GEMM providers. */
interface Grid {
  heads: string[];
  threadsList: number[];
  gemms: string[];
}

function readGrid(): Grid {
  const gemms = args.gemm!.split(',').filter(Boolean);
  for (const gemm of gemms)
    if (!(GEMMS as readonly string[]).includes(gemm))
      throw new Error(`--gemm takes ${GEMMS.join(', ')}; got '${gemm}'`);
  return {
    heads: args.heads!.split(',').filter(Boolean),
    threadsList: args.threads!.split(',').map(Number),
    gemms,
  };
}

/** The batches both sides train on, written once to `batchFile`, and what the report says of them. */
interface PreparedBatches {
  data: BenchData;
  batchFile: string;
  meanTokens: number;
  /** The share of padded target positions that are padding: what frost's decoder skips and the padded peer computes. */
  targetPadding: number;
}

async function prepareBatches(outDir: string): Promise<PreparedBatches> {
  const data = await prepareBenchData({
    data: args.data!,
    src: args.src!,
    tgt: args.tgt!,
    batchSize: BATCH,
    ...(MAX_TOKENS != null ? { maxTokens: MAX_TOKENS } : {}),
    joint: JOINT,
    count: Math.max(WARMUP + STEPS, 1),
    seed: Number(args.seed),
  });
  const batchFile = join(outDir, 'batches.bin');
  writeBenchData(batchFile, data);
  const meanTokens = sum(data.batches.map((b) => b.tokens)) / data.batches.length;
  const targetPadding = 1 - sum(data.batches.map((b) => b.tokens)) / sum(data.batches.map((b) => b.B * b.T));
  log(
    `${data.source}: |V| ${data.srcVocab} / ${data.tgtVocab}, ${data.batches.length} batches of ${BATCH_LABEL}, ${meanTokens.toFixed(0)} target tokens each on average, ${(100 * targetPadding).toFixed(0)}% of the padded target positions padding`,
  );
  return { data, batchFile, meanTokens, targetPadding };
}

/** The peer's torch version, or null when it does not run (--peer off, no peer script, no torch). */
function findPeer(): string | null {
  if (args.peer === 'off') return null;
  if (PEER_SCRIPT == null) {
    if (args.peer === 'on') throw new Error(`--peer on, but there is no bench/peer script for ${ARCH}`);
    log(`PyTorch peer: none written for ${ARCH}`);
    return null;
  }
  const torchVersion = peerAvailable(args.python!);
  if (torchVersion == null && args.peer === 'on') throw new Error(`--peer on, but ${args.python} cannot import torch`);
  log(
    torchVersion
      ? `PyTorch ${torchVersion} peer: ${args.python} ${PEER_SCRIPT}`
      : 'PyTorch peer: not available (no torch for this python)',
  );
  return torchVersion;
}

/** One frost worker (this file with --worker) for a head, thread count and GEMM provider. */
async function runFrost(
  batchFile: string,
  head: string,
  threads: number,
  gemm: string,
  leakSteps: number,
): Promise<SideResult> {
  const argv = [
    '--import',
    'tsx',
    join(REPO_ROOT, 'bench/train-speed.ts'),
    '--worker',
    '--head',
    head,
    '--batches',
    batchFile,
    '--threads',
    String(threads),
    '--gemm',
    gemm,
    '--wasm-threads',
    gemm === 'xnnpack' ? String(threads) : args['wasm-threads']!,
    '--steps',
    String(STEPS),
    '--warmup',
    String(WARMUP),
    '--leak-steps',
    String(leakSteps),
    '--arch',
    ARCH,
    '--preset',
    args.preset!,
    '--seed',
    args.seed!,
    '--joint',
    JOINT ? 'on' : 'off',
    '--phase-steps',
    String(PHASE_STEPS),
  ];
  const r = await runChild(process.execPath, argv, { FROST_NATIVE_GEMM_THREADS: String(threads) });
  r.head ??= head;
  if (r.error == null) {
    r.threads = threads;
    log(`frost   ${head} ${gemm} ${threads}T: ${stepLine(r)}`);
  } else log(`frost   ${head} ${gemm} ${threads}T failed: ${r.error}`);
  return { ...r, gemm: r.gemm ?? gemm, threads };
}

/** The --peak worker: every runner's best large square product, at `threads` threads. */
async function runPeak(threads: number): Promise<PeakReport | null> {
  const argv = ['--import', 'tsx', join(REPO_ROOT, 'bench/train-speed.ts'), '--peak', '--threads', String(threads)];
  argv.push('--wasm-threads', args['wasm-threads']!);
  const r = (await runChildProcess(process.execPath, argv, {
    FROST_NATIVE_GEMM_THREADS: String(threads),
    FROST_GEMM_PROBE: 'refresh',
  })) as unknown as PeakReport;
  if (r.error != null) {
    log(`GEMM peak failed: ${r.error}`);
    return r;
  }
  const best = truePeakOf(r);
  log(
    `GEMM peak, ${threads}T: ${r.runners.map((x) => `${x.runner} ${x.flopsPerSecond != null ? `${(x.flopsPerSecond / 1e9).toFixed(1)} GFLOP/s` : 'n/a'}${x.kernel ? ` (${x.kernel})` : ''}`).join(', ')}; best: ${best?.runner ?? 'none'}`,
  );
  return r;
}

/** The PyTorch peer for a head and thread count, with the architecture's config and recipe. */
async function runPeer(
  batchFile: string,
  cfg: Record<string, unknown>,
  head: string,
  threads: number,
  gemmPeak: boolean,
): Promise<SideResult> {
  const r = await runChild(
    args.python!,
    [
      join(REPO_ROOT, PEER_SCRIPT!),
      '--batches',
      batchFile,
      '--head',
      head,
      '--steps',
      String(STEPS),
      '--warmup',
      String(WARMUP),
      '--threads',
      String(threads),
      '--config',
      JSON.stringify({
        ...cfg,
        jointEmbedding: JOINT,
        labelSmoothing: LABEL_SMOOTHING,
        clipNorm: CLIP_NORM,
        ...(RECIPE.adamBetas ? { adamBetas: RECIPE.adamBetas } : {}),
      }),
      '--seed',
      args.seed!,
      '--targets',
      args['peer-targets']!,
      ...(gemmPeak ? ['--gemm-peak'] : []),
    ],
    { OMP_NUM_THREADS: String(threads) },
    args['peer-env'] === 'native' ? IMAGE_BLAS_ENV : [],
  );
  r.head ??= head;
  r.threads ??= threads;
  if (r.error == null) log(`pytorch ${head} ${threads}T: ${stepLine(r)}`);
  else log(`pytorch ${head} ${threads}T failed: ${r.error}`);
  return r;
}

/** Every side's pooled result and, per head/threads/GEMM, frost/PyTorch tokens/s of each round. */
interface Measured {
  frost: SideResult[];
  peer: SideResult[];
  roundRatios: Map<string, number[]>;
}

/**
 * --rounds rounds of one head at one thread count: every GEMM provider's frost worker and the peer, frost first in
 * odd rounds and the peer first in even ones; the leak check (tiny preset) runs once, in the first round.
 */
async function measureCell(
  batchFile: string,
  cfg: Record<string, unknown>,
  torchVersion: string | null,
  grid: Grid,
  head: string,
  threads: number,
  into: Measured,
): Promise<void> {
  const frostRounds = grid.gemms.map(() => [] as SideResult[]);
  const peerRounds: SideResult[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const frostSide = async () => {
      for (const [g, gemm] of grid.gemms.entries())
        frostRounds[g].push(await runFrost(batchFile, head, threads, gemm, round === 0 ? LEAK_STEPS : 0));
    };
    const peerSide = async () => {
      if (torchVersion != null) peerRounds.push(await runPeer(batchFile, cfg, head, threads, round === 0));
    };
    if (round % 2 === 0) {
      await frostSide();
      await peerSide();
    } else {
      await peerSide();
      await frostSide();
    }
    const p = peerRounds.at(-1);
    for (const [g, gemm] of grid.gemms.entries()) {
      const r = frostRounds[g].at(-1)!;
      if (p == null || p.error != null || r.error != null) continue;
      const key = `${head}/${threads}/${gemm}`;
      into.roundRatios.set(key, [...(into.roundRatios.get(key) ?? []), tps(r) / tps(p)]);
      if (ROUNDS > 1)
        log(`round ${round + 1}/${ROUNDS} ${head} ${gemm} ${threads}T: frost/PyTorch ${(tps(r) / tps(p)).toFixed(2)}`);
    }
  }
  for (const [g, gemm] of grid.gemms.entries())
    into.frost.push({ ...pooled(frostRounds[g]), gemm: frostRounds[g][0]?.gemm ?? gemm, threads } as SideResult);
  if (peerRounds.length > 0) into.peer.push({ ...pooled(peerRounds), threads });
}

/** The results table: one row per frost head/GEMM/threads that ran, beside its peer. */
function resultsTable({ frost, peer }: Measured): string[] {
  const peerFor = (r: SideResult) => peer.find((p) => p.head === r.head && p.threads === r.threads && p.error == null);
  const rows = frost
    .filter((r) => r.error == null)
    .map((r) => {
      const p = peerFor(r);
      return [
        r.head,
        gemmLabel(r),
        fmtInt(tps(r)),
        p ? fmtInt(tps(p)) : '–',
        p ? `${(tps(r) / tps(p)).toFixed(2)} / ${(tpsMedian(r) / tpsMedian(p)).toFixed(2)}` : '–',
        `${fmtMs(median(r.stepSeconds))} / ${fmtMs(quantile(r.stepSeconds, 0.9))}`,
        p ? `${fmtMs(median(p.stepSeconds))} / ${fmtMs(quantile(p.stepSeconds, 0.9))}` : '–',
        `${(r.cpuSeconds / sum(r.stepSeconds)).toFixed(2)}${p ? ` / ${(p.cpuSeconds / sum(p.stepSeconds)).toFixed(2)}` : ''}`,
        `${fmtMiB(r.peakRssBytes)} / ${fmtMiB(r.wasmHeapBytes)}${p ? ` / ${fmtMiB(p.peakRssBytes)}` : ''}`,
        `${r.tensorGrowth ?? '?'}${r.leak ? ` / ${r.leak.tensorGrowth} in ${r.leak.steps}` : ''}`,
      ];
    });
  return [
    '| head | frost GEMM | frost tok/s | PyTorch tok/s | frost/PyTorch: tok/s / median step | frost ms/step median / p90 | PyTorch ms/step median / p90 | CPU/wall frost / PyTorch | peak MiB: frost RSS / wasm heap / PyTorch RSS | tensor growth: small / tiny |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((cells) => `| ${cells.join(' | ')} |`),
  ];
}

/** One phase table per frost head/GEMM/threads that ran (bench/step-phase-report.ts). */
function stepPhaseSection(ok: SideResult[]): string[] {
  const profiled = ok.filter((r) => r.phases != null);
  if (profiled.length === 0) return [];
  return [
    "## Where frost's step goes: phases, GEMM share, the costliest other kernels",
    '',
    'data: tensors made from JS values (the batch, scalar constants); forward: the loss; backward: the tape walk; ' +
      'optimizer: gradient norm, clipping, Adam, freeing the gradients; other: the rest of the step. ' +
      "GEMM kernels: BatchMatMul, _FusedMatMul and Conv2D, self time (less the kernels they call); outside kernels: the engine's bookkeeping, the tape, disposal, JS.",
    '',
    ...profiled.flatMap((r) => stepPhaseLines(`${r.head}, ${gemmLabel(r)}`, r.phases!)),
  ];
}

/** Frozen heads vs learned: per-step saving next to the output layer's share of the FLOPs. */
function frozenHeadLines(ok: SideResult[]): string[] {
  const lines: string[] = [];
  for (const base of ok.filter((r) => r.head === 'learned')) {
    const f = base.flops!;
    const perToken = (r: SideResult) => sum(r.stepSeconds) / sum(r.tokens);
    lines.push(
      `learned (${gemmLabel(base)}): ${(f.total / 1e9).toFixed(1)} GFLOP of GEMM in a step of ${f.tokens} tokens, ` +
        `output layer ${(f.outputLayer / 1e9).toFixed(1)} (${((100 * f.outputLayer) / f.total).toFixed(0)}%; its dW, which frozen heads skip, is a third of that: ${((100 * f.outputLayer) / f.total / 3).toFixed(0)}% of the step).`,
    );
    for (const r of ok.filter((x) => x.head !== 'learned' && x.gemm === base.gemm && x.threads === base.threads)) {
      const saving = 1 - perToken(r) / perToken(base);
      const rf = r.flops!;
      lines.push(
        `- ${r.head}: ${r.frozen > 0 ? `${fmtInt(r.frozen)} frozen, ` : ''}${fmtInt(r.learnable)} learnable parameters; ` +
          `${(rf.total / 1e9).toFixed(1)} GFLOP/step (output layer ${(rf.outputLayer / 1e9).toFixed(1)}); ` +
          `time per token ${saving >= 0 ? `${(100 * saving).toFixed(0)}% lower` : `${(-100 * saving).toFixed(0)}% higher`} than learned ` +
          `(FLOPs ${((100 * (f.total - rf.total)) / f.total).toFixed(0)}% lower)${saving < 0 && r.frozen > 0 ? ' — SLOWER THAN LEARNED' : ''}`,
      );
    }
  }
  return lines;
}

/**
 * How far a step is from the machine's GEMM limit: the model's multiply-adds per target token (counted from the
 * MatMul kernels of a step, forward and backward), the rate the step achieved on them, and that rate's share of the
 * GEMM peak measured in the same process. 100% would be a step that is nothing but large GEMMs at full speed.
 */
function gemmLimitLines(ok: SideResult[], truePeak: RunnerPeak | null): string[] {
  return ok
    .filter((r) => r.flops != null && (r.gemmPeak != null || truePeak != null))
    .map((r) => {
      const f = r.flops!;
      const flopsPerToken = f.total / f.tokens;
      const achieved = flopsPerToken * tps(r);
      // The machine's true peak (the best runner), else the peak through the worker's own runner.
      const peak = truePeak?.flopsPerSecond ?? r.gemmPeak!.flopsPerSecond;
      const which = truePeak != null ? `the machine's GEMM peak, ${truePeak.runner}'s` : 'the GEMM peak';
      const own =
        truePeak != null && r.gemmPeak != null
          ? ` (through the worker's own runner ${(r.gemmPeak.flopsPerSecond / 1e9).toFixed(1)} GFLOP/s: ${((100 * achieved) / r.gemmPeak.flopsPerSecond).toFixed(0)}%)`
          : '';
      return (
        `- ${r.head} (${gemmLabel(r)}): ${fmtInt(flopsPerToken / 2)} multiply-adds per target token in a training step ` +
        `(output layer ${((100 * f.outputLayer) / f.total).toFixed(0)}%); achieved ${(achieved / 1e9).toFixed(1)} GFLOP/s ` +
        `= ${((100 * achieved) / peak).toFixed(0)}% of ${which} ${(peak / 1e9).toFixed(1)} GFLOP/s (${truePeak?.shape ?? r.gemmPeak!.shape})${own}; ` +
        `at the peak a step of ${fmtInt(f.tokens)} tokens would take ${fmtMs(f.total / peak)} ms, it took ${fmtMs(median(r.stepSeconds))} (median)`
      );
    });
}

/** The best runner of a peak report, or null. */
function truePeakOf(peak: PeakReport | null): RunnerPeak | null {
  const ok = (peak?.runners ?? []).filter((r) => r.flopsPerSecond != null);
  return ok.length === 0 ? null : ok.reduce((a, b) => (b.flopsPerSecond! > a.flopsPerSecond! ? b : a));
}

const fmtEnv = (env: Record<string, string> | undefined, names: readonly string[]) => {
  const set = names.filter((n) => env?.[n] != null).map((n) => `${n}=${env![n]}`);
  return set.length > 0 ? set.join(' ') : `${names.join(', ')} unset`;
};

/**
 * The machine's GEMM peak, per runner frost can use, beside the CPU's ISA, and what kernels each side's BLAS runs:
 * what a ratio against PyTorch means.
 */
function peakLines(peak: PeakReport | null, peer: SideResult[]): string[] {
  const { model, isa } = cpuIsa();
  const lines = [
    "## The machine's GEMM peak",
    '',
    `CPU: ${model} ×${availableParallelism()}; ISA: ${isa.join(', ') || 'none of AVX2, AVX-512, VNNI'} (/proc/cpuinfo).`,
    '',
  ];
  const best = truePeakOf(peak);
  if (peak == null || peak.error != null) lines.push(`Peak: not measured (${peak?.error ?? 'no report'}).`, '');
  else {
    lines.push(
      `The best large square product (tf.matMul through frost's wasm BatchMatMul) through each runner frost can use, ${peak.threads} thread${peak.threads === 1 ? '' : 's'} (XNNPACK: the wasm build's):`,
      '',
      '| runner | what | kernels | product | GFLOP/s |',
      '|---|---|---|---|---:|',
      ...peak.runners.map((r) => {
        const mark = r === best ? '**' : '';
        return r.error != null
          ? `| ${r.runner} | not available: ${r.error} | | | – |`
          : `| ${mark}${r.runner}${mark} | ${r.description} | ${r.kernel ?? '–'} | ${r.shape} | ${mark}${(r.flopsPerSecond! / 1e9).toFixed(1)}${mark} |`;
      }),
      '',
      best != null
        ? `True GEMM peak: **${(best.flopsPerSecond! / 1e9).toFixed(1)} GFLOP/s, set by ${best.runner}** (${best.description}).`
        : 'True GEMM peak: no runner measured.',
    );
    if (peak.probe != null)
      lines.push(
        `frost's per-shape choice (24 classes, probed afresh at the start of this run, load ${peak.probe.loadPerCore} a core): ${peak.probe.summary}; each class's times are in results.json (gemmPeak.probe).`,
      );
  }
  const p = peer.find((x) => x.error == null && (x.blasCorename != null || x.blasConfigLines != null));
  const pp = peer.find((x) => x.error == null && x.gemmPeak != null)?.gemmPeak;
  const blasRunner = peak?.runners.find((r) => r.runner === 'blas');
  lines.push(
    '',
    `BLAS kernels: frost's ${blasRunner?.description?.split(' (')[0] ?? 'BLAS: none loaded'}${blasRunner?.kernel ? `, ${blasRunner.kernel}` : ''} ` +
      `(${fmtEnv(peak?.env, IMAGE_BLAS_ENV)} in frost's environment, left as it is); ` +
      (p != null
        ? `PyTorch's ${p.openblasConfig?.split(' ').slice(0, 2).join(' ') ?? 'BLAS'}${p.blasCorename ? `, OpenBLAS core ${p.blasCorename}` : ''} (${p.openblasLibrary ?? (p.blas ?? []).join(', ')}; ${fmtEnv(p.openblasEnv, IMAGE_BLAS_ENV)} in its environment: --peer-env ${args['peer-env']}); torch.__config__.show(): ${(p.blasConfigLines ?? []).join('; ') || '?'}.`
        : 'PyTorch: no peer ran.'),
  );
  if (pp != null)
    lines.push(
      `PyTorch's own GEMM peak (torch.mm, ${pp.shape}, same threads, its environment): ${(pp.flopsPerSecond / 1e9).toFixed(1)} GFLOP/s` +
        (best?.flopsPerSecond != null
          ? `, ${(pp.flopsPerSecond / best.flopsPerSecond).toFixed(2)}× frost's true peak.`
          : '.'),
    );
  lines.push('');
  return lines;
}

/** What the report says of the run around its tables. */
interface ReportContext {
  grid: Grid;
  batches: PreparedBatches;
  cfg: Record<string, unknown>;
  torchVersion: string | null;
  machine: string;
  loadStart: string;
  started: number;
}

const loadAverages = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' / ');

/** The Markdown report (results.md, and what the bench prints). */
function reportMarkdown(measured: Measured, leaks: SideResult[], ctx: ReportContext, peak: PeakReport | null): string {
  const { frost, peer, roundRatios } = measured;
  const { data, meanTokens, targetPadding } = ctx.batches;
  const { heads, threadsList, gemms } = ctx.grid;
  const blas = peer.find((p) => p.blas)?.blas ?? [];
  const steals = [...frost, ...peer].flatMap((r) => (r.stealShare == null ? [] : [r.stealShare]));
  const peerConv = peer.find((p) => p.conv)?.conv;
  return [
    `# Training speed: frost (tfjs wasm) vs PyTorch, ${ARCH}/${args.preset}`,
    '',
    `${data.source}; |V| ${data.srcVocab} → ${data.tgtVocab}; batches of ${BATCH_LABEL}, ${meanTokens.toFixed(0)} target tokens on average (${(100 * targetPadding).toFixed(0)}% of the padded target positions are padding); ` +
      `Adam, teacher forcing, dropout ${ctx.cfg.dropout}; ${WARMUP} warm-up + ${STEPS} measured steps per head and round, the same batches on both sides; ` +
      `${ROUNDS} round${ROUNDS === 1 ? '' : 's'} per head, frost first in odd rounds and PyTorch first in even ones.`,
    `Machine: ${ctx.machine}; load average at the start ${ctx.loadStart}, at the end ${loadAverages()} (1/5/15 min; shared: other processes may run, CPU/wall shows the share each side got)` +
      (steals.length > 0
        ? `; CPU time stolen by the VM's host while a side ran: up to ${(100 * Math.max(...steals)).toFixed(1)}% (each side's figure is in the log and results.json).`
        : '.'),
    ctx.torchVersion
      ? `PyTorch ${ctx.torchVersion} (${args.python}), ${peer.find((p) => p.threads)?.threads ?? '?'} threads${peerConv ? `, convolutions ${peerConv} (FROST_PEER_CONV=expanded|unfold)` : ''}, ${ARCH === 'convs2s' ? 'both decoders computing every padded target position (a convolutional decoder runs the whole target at once)' : PEER_TARGETS[args['peer-targets']!]}; BLAS loaded in its process: ${blas.join(', ') || 'unknown'} (torch's ${/BLAS_INFO=\w+/.exec(peer.find((p) => p.blasConfig)?.blasConfig ?? '')?.[0] ?? 'BLAS_INFO=?'}: it calls whatever libblas.so.3 the system's alternatives point to).`
      : 'PyTorch: not available here, no ratios.',
    '',
    ...peakLines(peak, peer),
    ...resultsTable(measured),
    '',
    ...(roundRatios.size > 0 && ROUNDS > 1
      ? [
          `frost/PyTorch tokens/s in each round: ${[...roundRatios].map(([k, xs]) => `${k.replace(/\//g, ' ')}: ${xs.map((x) => x.toFixed(2)).join(', ')}`).join('; ')}.`,
          '',
        ]
      : []),
    '## Distance to the GEMM limit',
    '',
    ...gemmLimitLines(
      frost.filter((r) => r.error == null),
      truePeakOf(peak),
    ),
    '',
    ...stepPhaseSection(frost.filter((r) => r.error == null)),
    '## Frozen heads vs learned (same run)',
    '',
    ...frozenHeadLines(frost.filter((r) => r.error == null)),
    '',
    `Tensor leaks: ${leaks.length === 0 ? `none (growth 0 over the ${STEPS} measured steps of each head, and over ${LEAK_STEPS} steps of the tiny preset)` : `GROWTH in ${leaks.map((r) => r.head).join(', ')}`}.`,
    '',
    `Command: \`npm run bench:train -- ${ARCH === DEFAULT_BENCH_ARCH ? '' : `--arch ${ARCH} `}--steps ${STEPS} --warmup ${WARMUP} --rounds ${ROUNDS} --heads ${heads.join(',')} --threads ${threadsList.join(',')} --gemm ${gemms.join(',')}${args['peer-targets'] === 'padded' ? '' : ` --peer-targets ${args['peer-targets']}`}${args['peer-env'] === 'native' ? '' : ` --peer-env ${args['peer-env']}`}${PHASE_STEPS === 2 ? '' : ` --phase-steps ${PHASE_STEPS}`}\` (${((Date.now() - ctx.started) / 60000).toFixed(1)} min).`,
  ].join('\n');
}

async function orchestrate(): Promise<void> {
  const grid = readGrid();
  const outDir = resolve(REPO_ROOT, args.out!);
  await mkdir(outDir, { recursive: true });
  const started = Date.now();
  const loadStart = loadAverages();
  const batches = await prepareBatches(outDir);
  const torchVersion = findPeer();
  const cfg = resolveArchConfig(ARCH, args.preset!);
  const peak = await runPeak(Math.max(...grid.threadsList));

  const measured: Measured = { frost: [], peer: [], roundRatios: new Map() };
  for (const head of grid.heads)
    for (const threads of grid.threadsList)
      await measureCell(batches.batchFile, cfg, torchVersion, grid, head, threads, measured);

  const machine = `${cpus()[0]?.model ?? 'cpu'} ×${availableParallelism()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
  const { frost, peer, roundRatios } = measured;
  const leaks = frost.filter(
    (r) => r.error == null && ((r.tensorGrowth ?? 0) !== 0 || (r.leak?.tensorGrowth ?? 0) !== 0),
  );
  const md = reportMarkdown(measured, leaks, { grid, batches, cfg, torchVersion, machine, loadStart, started }, peak);
  const { data, meanTokens, targetPadding } = batches;
  await writeFile(
    join(outDir, 'results.json'),
    `${JSON.stringify({ machine, isa: cpuIsa().isa, gemmPeak: peak, args, source: data.source, vocab: [data.srcVocab, data.tgtVocab], meanTokens, targetPadding, frost, peer, roundRatios: Object.fromEntries(roundRatios) }, null, 2)}\n`,
  );
  await writeFile(join(outDir, 'results.md'), `${md}\n`);
  process.stdout.write(`${md}\n`);
  if (leaks.length > 0 || frost.some((r) => r.error != null)) process.exitCode = 1;
}

if (args.peak) await peakWorker();
else if (args.worker) await worker();
else await orchestrate();
