/**
 * Where a training step's time goes, per kernel: runs a few steps of rnn-attn with timed kernels
 * and prints kernel time grouped by kernel name, and by kernel name + input shapes.
 *
 *   node --import tsx bench/train-profile.ts --head learned --preset small --steps 2
 *   node --import tsx bench/train-profile.ts --batches /path/batches.bin   (a file train-speed wrote)
 *
 * Kernel times are wall times of the synchronous kernel calls (every registered kernel is wrapped
 * with a timer), so they include the JS side of each kernel; "outside kernels" is step time minus
 * their sum: the engine's bookkeeping, the gradient tape and JS between kernels. On a shared
 * machine compare the CPU time line too: it counts only this process's work.
 */
import '@tensorflow/tfjs';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs-core';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { Adam } from '../train/optim/adam.ts';
import { prepareBenchData, readBenchData } from './train-speed-data.ts';

const { values: args } = parseArgs({
  options: {
    head: { type: 'string', default: 'learned' },
    preset: { type: 'string', default: 'small' },
    steps: { type: 'string', default: '2' },
    batches: { type: 'string' },
    data: { type: 'string', default: 'multi30k' },
    threads: { type: 'string' },
    top: { type: 'string', default: '40' },
  },
});

const info = await initBackend({ wasmThreads: args.threads ? Number(args.threads) : undefined });
const steps = Number(args.steps);
const data = args.batches
  ? readBenchData(args.batches)
  : await prepareBenchData({ data: args.data!, src: 'de', tgt: 'en', batchSize: 64, count: steps + 1, seed: 1 });
const model = buildModel('rnn-attn', resolveArchConfig('rnn-attn', args.preset!), { srcVocab: data.srcVocab, tgtVocab: data.tgtVocab }, { name: args.head! }, 1);
const adam = new Adam(model.params.learnable);
const step = (i: number) => {
  const b = data.batches[i % data.batches.length];
  adam.minimize(() => tf.div(model.lossSum(b, true), b.tokens) as tf.Scalar);
};
step(0); // warm-up: XNNPACK operators, transposed-weight cache

interface Row {
  ms: number;
  calls: number;
}
const byName = new Map<string, Row>();
const byShape = new Map<string, Row>();
const add = (m: Map<string, Row>, k: string, ms: number) => {
  const r = m.get(k) ?? { ms: 0, calls: 0 };
  r.ms += ms;
  r.calls += 1;
  m.set(k, r);
};

/**
 * Every kernel registered for the backend, wrapped with a timer. Not tf.profile: that reads back
 * every output (a copy of each) and inflates small kernels; this adds one performance.now() pair.
 * A kernel that calls another through the registry would count twice (none of frost's does on the
 * paths a training step takes).
 */
const backendName = tf.getBackend();
let depth = 0;
for (const config of tf.getKernelsForBackend(backendName)) {
  const inner = config.kernelFunc;
  const timed: tf.KernelFunc = (a) => {
    if (depth > 0) return inner(a);
    depth++;
    const t0 = performance.now();
    try {
      return inner(a);
    } finally {
      depth--;
      if (recording) {
        const ms = performance.now() - t0;
        add(byName, config.kernelName, ms);
        const shapes = Object.values(a.inputs).map((t) => `[${(t as tf.TensorInfo | undefined)?.shape.join(',') ?? ''}]`);
        add(byShape, `${config.kernelName} ${shapes.join(' ')}`, ms);
      }
    }
  };
  tf.unregisterKernel(config.kernelName, backendName);
  tf.registerKernel({ ...config, kernelFunc: timed });
}
let recording = false;

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
const total = [...byName.values()].reduce((a, r) => a + r.ms, 0);
const fmt = (m: Map<string, Row>, top: number) =>
  [...m.entries()]
    .sort((a, b) => b[1].ms - a[1].ms)
    .slice(0, top)
    .map(([k, r]) => `${(r.ms / steps).toFixed(1).padStart(9)} ms ${(r.calls / steps).toFixed(1).padStart(7)}× ${((100 * r.ms) / total).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
console.log(`${info.name} ${info.threads ?? ''} thread(s), GEMM: ${info.gemm ?? 'backend'}, ${args.preset}/${args.head}, ${steps} steps, ${(tokens / steps).toFixed(0)} target tokens/step`);
console.log(
  `step ${(wall / steps).toFixed(0)} ms wall, ${(cpu / steps).toFixed(0)} ms CPU (all threads); kernels ${(total / steps).toFixed(0)} ms, ` +
    `outside kernels ${((wall - total) / steps).toFixed(0)} ms, ${([...byName.values()].reduce((a, r) => a + r.calls, 0) / steps).toFixed(0)} kernel calls/step`,
);
console.log('\nby kernel:\n' + fmt(byName, Number(args.top)));
console.log('\nby kernel and input shapes (per step):\n' + fmt(byShape, Number(args.top)));
adam.dispose();
model.params.dispose();
