/**
 * Issue #41: what a training step holds at its peak. Trains a few Adam steps of `--arch` `small` (`--head`) on the
 * batches bench:train wrote, tracking every tensor buffer the wasm backend makes (makeOutput, move) and which of them
 * are alive at each allocation; prints per step the peak of live tensor data, the wasm heap and the process RSS, and
 * for the first step the shapes alive at its peak.
 *
 *   npm run bench:train -- --arch transformer --heads learned --steps 1 --rounds 1 --peer off --out /tmp/ts
 *   node --import tsx bench/investigations/train-step-memory.ts --batches /tmp/ts/batches.bin [--steps 4]
 *
 * Live data counts each buffer once (a reshape or an aliasing clone shares its input's), from the first step on:
 * the parameters and Adam's moments made before it are not counted until they are replaced.
 */
import '@tensorflow/tfjs';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs-core';
import { buildModel, resolveArchConfig } from '../../models/index.ts';
import { initBackend } from '../../train/backend/select.ts';
import { Adam } from '../../train/optim/adam.ts';
import { readBenchData } from '../train-speed-data.ts';

const { values: args } = parseArgs({
  options: {
    batches: { type: 'string' },
    arch: { type: 'string', default: 'transformer' },
    head: { type: 'string', default: 'learned' },
    steps: { type: 'string', default: '4' },
  },
});
if (args.batches == null) throw new Error('--batches FILE: the batches.bin bench:train wrote');

await initBackend({ quiet: true, wasmThreads: 1, nativeGemm: 'auto' });
const data = readBenchData(args.batches, true);
const sizes = { srcVocab: data.srcVocab, tgtVocab: data.tgtVocab, jointEmbedding: true };
const model = buildModel(args.arch!, resolveArchConfig(args.arch!, 'small'), sizes, { name: args.head! }, 1);
const adam = new Adam(model.params.learnable, { clipNorm: 0, beta1: 0.9, beta2: 0.98 });

interface Tracked {
  bytes: number;
  shape: number[];
}
interface BackendHooks {
  dataIdMap: { has(id: object): boolean };
  wasm: { HEAPU8: Uint8Array };
  [method: string]: unknown;
}
const backend = tf.backend() as unknown as BackendHooks;
const buffers = new Map<object, Tracked>();
let peak = 0;
let peakShapes: number[][] = [];
const liveBytes = () => {
  let sum = 0;
  for (const [id, t] of buffers) {
    if (backend.dataIdMap.has(id)) sum += t.bytes;
    else buffers.delete(id);
  }
  return sum;
};
/** Wraps a backend method that makes a buffer: `made` names its id and shape. */
const track = (method: string, made: (args: unknown[], result: unknown) => [object, number[]]) => {
  const inner = (backend[method] as (...a: unknown[]) => unknown).bind(backend);
  backend[method] = (...a: unknown[]) => {
    const result = inner(...a);
    const [id, shape] = made(a, result);
    buffers.set(id, { shape, bytes: 4 * shape.reduce((p, n) => p * n, 1) });
    const live = liveBytes();
    if (live > peak) {
      peak = live;
      peakShapes = [...buffers.values()].map((t) => t.shape);
    }
    return result;
  };
};
track('makeOutput', (a, r) => [(r as tf.TensorInfo).dataId, a[0] as number[]]);
track('move', (a) => [a[0] as object, a[2] as number[]]);

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
for (let i = 0; i < Number(args.steps); i++) {
  const batch = data.batches[i % data.batches.length]!;
  peak = liveBytes();
  adam.minimize(() => tf.div(model.lossSum(batch, true, { labelSmoothing: 0.1 }), batch.tokens) as tf.Scalar);
  if (i === 0) {
    const byShape = new Map<string, number>();
    for (const s of peakShapes) byShape.set(JSON.stringify(s), (byShape.get(JSON.stringify(s)) ?? 0) + 1);
    const rows = [...byShape].map(([s, n]) => ({
      s,
      n,
      bytes: n * 4 * (JSON.parse(s) as number[]).reduce((p, k) => p * k, 1),
    }));
    for (const r of rows.sort((a, b) => b.bytes - a.bytes).slice(0, 12))
      console.log(`${r.s} ×${r.n}: ${mib(r.bytes)} MiB`);
  }
  console.log(
    `step ${i}: ${batch.tokens} target tokens; live tensor data at the peak ${mib(peak)} MiB; ` +
      `wasm heap ${mib(backend.wasm.HEAPU8.buffer.byteLength)} MiB; RSS ${mib(process.memoryUsage().rss)} MiB`,
  );
}
