/**
 * The loss with and without label smoothing, side by side in one process: value and gradient of
 * maskedCrossEntropySum (models/loss.ts) over [N, |V|] logits the size of a training step's (batch 64
 * × 20 target steps, |V| = 6000), through frost's wasm kernels with ε = 0 and ε = 0.1, and through
 * the tfjs-ops fallback with ε = 0.1; interleaved runs, medians, ratios to the plain fused loss.
 *
 *   node --import tsx bench/investigations/label-smoothing.ts     (BENCH_RUNS=30 for more runs; default 15)
 */
import '@tensorflow/tfjs';
import * as tf from '@tensorflow/tfjs-core';
import { streamKey, uniformMatrix } from '../../core/random.ts';
import { setFusedMode } from '../../models/layers/fused.ts';
import { maskedCrossEntropySum } from '../../models/loss.ts';
import { initBackend } from '../../train/backend/select.ts';

const N = 1280;
const V = 6000;
const RUNS = Number(process.env.BENCH_RUNS ?? 15);

const info = await initBackend({ prefer: 'wasm' });
const z = tf.tensor2d(uniformMatrix(streamKey(9, 'bench-smoothing'), N, V, -4, 4), [N, V]);
const y = tf.tensor1d(
  Array.from({ length: N }, (_, i) => (i * 7919) % V),
  'int32',
);
const mask = tf.tensor1d(
  Array.from({ length: N }, (_, i) => (i % 10 === 9 ? 0 : 1)),
  'float32',
);

const cases = {
  'fused, ε = 0': { mode: 'auto', eps: 0 },
  'fused, ε = 0.1': { mode: 'auto', eps: 0.1 },
  'tfjs ops, ε = 0.1': { mode: 'ops', eps: 0.1 },
} as const;

function once(mode: 'auto' | 'ops', eps: number): number {
  const previous = setFusedMode(mode);
  const t0 = performance.now();
  const { value, grad } = tf.valueAndGrad((x: tf.Tensor) =>
    maskedCrossEntropySum(x as tf.Tensor2D, y, mask, { labelSmoothing: eps }),
  )(z);
  grad.dataSync();
  const ms = performance.now() - t0;
  tf.dispose([value, grad]);
  setFusedMode(previous);
  return ms;
}

const times: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (const [, c] of Object.entries(cases)) once(c.mode, c.eps); // warm-up
for (let r = 0; r < RUNS; r++) for (const [name, c] of Object.entries(cases)) times[name]!.push(once(c.mode, c.eps));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const base = median(times['fused, ε = 0']!);
console.log(`loss value + gradient, [${N}, ${V}] logits, ${RUNS} interleaved runs, backend ${info.name}`);
for (const [name, t] of Object.entries(times))
  console.log(`${name.padEnd(20)} ${median(t).toFixed(1).padStart(7)} ms   ×${(median(t) / base).toFixed(2)}`);
