/**
 * Where a training step's time goes, per kernel: runs a few steps of rnn-attn (or --arch) with timed kernels
 * and prints kernel time grouped by kernel name, and by kernel name + input shapes.
 *
 *   node --import tsx bench/train-profile.ts --head learned --preset small --steps 2
 *   node --import tsx bench/train-profile.ts --batches /path/batches.bin   (a file train-speed wrote)
 *   node --import tsx bench/train-profile.ts --arch transformer --head shared-l2   (joint vocabulary, the recipe's
 *     label smoothing and ≤ 4096-token batches, as bench/train-speed.ts --arch transformer trains it)
 *   node --import tsx bench/train-profile.ts --ab unfused --steps 8   (A/B: see below)
 *
 * Kernel times are the wall and CPU self times of the synchronous kernel calls (every registered kernel
 * is wrapped with a timer and process.cpuUsage: bench/kernel-timers.ts; a kernel another calls through the
 * registry, such as the BatchMatMul of a Conv2D gradient, is charged as itself), so they include the JS side
 * of each kernel; "outside kernels" is step time minus their sum: the engine's bookkeeping, the gradient tape and
 * JS between kernels. On a shared machine sort by CPU (the default): wall times of the kernels that
 * get preempted, and of the multi-threaded GEMMs, swing with the machine's load. CPU counts every
 * thread of the process (the native GEMM's threads included).
 *
 * --mode auto|ops|unfused picks how the GRU and attention steps run (models/layers/fused.ts).
 * --ab MODE instead alternates steps (same batches) between MODE and 'auto', without kernel
 * timers, and prints each one's CPU and wall per step and their ratio: a before/after measured
 * side by side, so that both halves share the machine's load.
 */
import '@tensorflow/tfjs';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs-core';
import { buildModel, getArch, resolveArchConfig } from '../models/index.ts';
import { setFusedMode, type FusedMode } from '../models/layers/fused.ts';
import { initBackend } from '../train/backend/select.ts';
import { Adam } from '../train/optim/adam.ts';
import { archHelp, archsReading, DEFAULT_BENCH_ARCH, jointByDefault, pickArchs } from './archs.ts';
import { timeKernels } from './kernel-timers.ts';
import { prepareBenchData, readBenchData } from './train-speed-data.ts';

const USAGE = `
node --import tsx bench/train-profile.ts [--arch A] [--head learned] [--preset small] [--steps 2] [--max-tokens N]
                                         [--batches FILE] [--data multi30k] [--threads N] [--top 40]
                                         [--sort cpu|wall] [--mode auto|ops|unfused] [--ab MODE]`;

const { values: args } = parseArgs({
  options: {
    head: { type: 'string', default: 'learned' },
    arch: { type: 'string', default: DEFAULT_BENCH_ARCH },
    'max-tokens': { type: 'string' },
    preset: { type: 'string', default: 'small' },
    steps: { type: 'string', default: '2' },
    batches: { type: 'string' },
    data: { type: 'string', default: 'multi30k' },
    threads: { type: 'string' },
    top: { type: 'string', default: '40' },
    sort: { type: 'string', default: 'cpu' },
    mode: { type: 'string', default: 'auto' },
    ab: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(archHelp(USAGE, '--arch', archsReading('tokens')));
  process.exit(0);
}

const MODES: readonly FusedMode[] = ['auto', 'ops', 'unfused'];
const asMode = (m: string): FusedMode => {
  if (!(MODES as readonly string[]).includes(m))
    throw new RangeError(`--mode/--ab must be one of ${MODES.join(', ')}, got '${m}'`);
  return m as FusedMode;
};
setFusedMode(asMode(args.mode!));

const info = await initBackend({ wasmThreads: args.threads ? Number(args.threads) : undefined });
const steps = Number(args.steps);
// What bench/train-speed.ts takes from the architecture's recipe: joint vocabulary, token batches, smoothing, clipping.
const [arch] = pickArchs(args.arch, archsReading('tokens')) as [string];
const recipe = getArch(arch).recipe ?? {};
const joint = jointByDefault(arch);
const maxTokens = args['max-tokens'] != null ? Number(args['max-tokens']) : recipe.maxTokens;
const data = args.batches
  ? readBenchData(args.batches, joint)
  : await prepareBenchData({
      data: args.data!,
      src: 'de',
      tgt: 'en',
      batchSize: maxTokens != null ? Infinity : 64,
      ...(maxTokens != null ? { maxTokens } : {}),
      joint,
      count: steps + 1,
      seed: 1,
    });
const model = buildModel(
  arch,
  resolveArchConfig(arch, args.preset!),
  { srcVocab: data.srcVocab, tgtVocab: data.tgtVocab, ...(joint ? { jointEmbedding: true } : {}) },
  { name: args.head! },
  1,
);
const adam = new Adam(model.params.learnable, { clipNorm: recipe.clipNorm ?? 5 });
const loss = { labelSmoothing: recipe.labelSmoothing ?? 0 };
const step = (i: number) => {
  const b = data.batches[i % data.batches.length];
  adam.minimize(() => tf.div(model.lossSum(b, true, loss), b.tokens) as tf.Scalar);
};
step(0); // warm-up: XNNPACK operators, transposed-weight cache

if (args.ab != null) {
  const modes: FusedMode[] = [asMode(args.ab), 'auto'];
  setFusedMode(modes[0]);
  step(0); // warm-up of the other mode's kernels
  const rows = modes.map(() => ({ cpu: [] as number[], wall: [] as number[], calls: 0 }));
  for (let i = 1; i <= steps; i++) {
    // Both modes train on batch i: A, then B, then A first again on the next batch, and so on.
    const order = i % 2 === 1 ? [0, 1] : [1, 0];
    for (const m of order) {
      setFusedMode(modes[m]);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      step(i);
      rows[m].wall.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      rows[m].cpu.push((c.user + c.system) / 1000);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  console.log(`A/B, ${args.preset}/${args.head}, ${steps} batches each, alternating (ms per step: median, mean):`);
  modes.forEach((m, k) => {
    const r = rows[k];
    console.log(
      `  ${m.padEnd(8)} CPU ${med(r.cpu).toFixed(0).padStart(6)} ${(total(r.cpu) / steps).toFixed(0).padStart(6)}   wall ${med(r.wall).toFixed(0).padStart(6)} ${(total(r.wall) / steps).toFixed(0).padStart(6)}`,
    );
  });
  console.log(
    `  ${modes[0]}/auto: CPU ${(total(rows[0].cpu) / total(rows[1].cpu)).toFixed(2)}×, wall ${(total(rows[0].wall) / total(rows[1].wall)).toFixed(2)}×`,
  );
  adam.dispose();
  model.params.dispose();
  process.exit(0);
}

interface Row {
  ms: number;
  cpu: number;
  calls: number;
}
const byName = new Map<string, Row>();
const byShape = new Map<string, Row>();
const add = (m: Map<string, Row>, k: string, ms: number, cpu: number) => {
  const r = m.get(k) ?? { ms: 0, cpu: 0, calls: 0 };
  r.ms += ms;
  r.cpu += cpu;
  r.calls += 1;
  m.set(k, r);
};

// Self times (bench/kernel-timers.ts): a kernel another one calls through the registry is charged as itself, once.
let recording = false;
const timers = timeKernels(
  ({ kernelName, inputs, selfMs, selfCpuMs }) => {
    if (!recording) return;
    add(byName, kernelName, selfMs, selfCpuMs!);
    const shapes = Object.values(inputs).map((t) => `[${(t as tf.TensorInfo | undefined)?.shape.join(',') ?? ''}]`);
    add(byShape, `${kernelName} ${shapes.join(' ')}`, selfMs, selfCpuMs!);
  },
  { cpu: true },
);

let wall = 0;
let cpu = 0;
let tokens = 0;
for (let i = 1; i <= steps; i++) {
  recording = true;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  step(i);
  wall += performance.now() - t0;
  const c = process.cpuUsage(c0);
  cpu += (c.user + c.system) / 1000;
  recording = false;
  tokens += data.batches[i % data.batches.length].tokens;
}
timers.restore();
const total = [...byName.values()].reduce((a, r) => a + r.ms, 0);
const totalCpu = [...byName.values()].reduce((a, r) => a + r.cpu, 0);
const key = (r: Row) => (args.sort === 'wall' ? r.ms : r.cpu);
const fmt = (m: Map<string, Row>, top: number) =>
  [...m.entries()]
    .sort((a, b) => key(b[1]) - key(a[1]))
    .slice(0, top)
    .map(
      ([k, r]) =>
        `${(r.cpu / steps).toFixed(1).padStart(9)} ms CPU ${((100 * r.cpu) / totalCpu).toFixed(1).padStart(5)}% ` +
        `${(r.ms / steps).toFixed(1).padStart(9)} ms wall ${(r.calls / steps).toFixed(1).padStart(7)}×  ${k}`,
    )
    .join('\n');
console.log(
  `${info.name} ${info.threads ?? ''} thread(s), GEMM: ${info.gemm ?? 'backend'}, ${args.preset}/${args.head}, mode ${args.mode}, ${steps} steps, ${(tokens / steps).toFixed(0)} target tokens/step`,
);
console.log(
  `step ${(wall / steps).toFixed(0)} ms wall, ${(cpu / steps).toFixed(0)} ms CPU (all threads); kernels ${(total / steps).toFixed(0)} ms wall, ` +
    `${(totalCpu / steps).toFixed(0)} ms CPU; outside kernels ${((wall - total) / steps).toFixed(0)} ms wall, ${((cpu - totalCpu) / steps).toFixed(0)} ms CPU; ` +
    `${([...byName.values()].reduce((a, r) => a + r.calls, 0) / steps).toFixed(0)} kernel calls/step`,
);
console.log('\nby kernel:\n' + fmt(byName, Number(args.top)));
console.log('\nby kernel and input shapes (per step):\n' + fmt(byShape, Number(args.top)));
adam.dispose();
model.params.dispose();
