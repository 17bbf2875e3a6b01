/**
 * The native GEMM providers (train/backend/kernels/gemm-providers.ts) and XNNPACK side by side, on
 * the products a training step of rnn-attn/small and of the Transformer small makes, through frost's wasm
 * BatchMatMul kernel (so each figure includes what a step pays: the kernel's own work around the call). MLAS runs
 * through both of its doors (gemm-mlas.ts): onnxruntime's C API, in place, and the N-API binding, which copies each
 * result back. Runs are interleaved provider by provider; medians per call; ratios against the first provider. The
 * two small products go through each runner too, though training leaves products below a runner's
 * minMacs to XNNPACK: they show the per-call cost that threshold is set from. The batched product (attention's
 * q·kᵀ over 780 heads × sentences) goes entry by entry to a runner without a batched call, in one call to MLAS's.
 *
 *   npm run bench:gemm
 *   FROST_NATIVE_GEMM_THREADS=1 npm run bench:gemm      (one thread each)
 *   BENCH_BUDGET_MS=4000 npm run bench:gemm             (time per shape, default 3000 ms)
 */
import '@tensorflow/tfjs';
import * as tf from '@tensorflow/tfjs-core';
import { GEMM_PROVIDERS } from '../train/backend/kernels/gemm-providers.ts';
import { loadMlasGemm } from '../train/backend/kernels/gemm-mlas.ts';
import { resolveNativeGemm, setNativeGemm, type NativeGemm } from '../train/backend/kernels/native-gemm.ts';
import { initBackend } from '../train/backend/select.ts';

const BUDGET_MS = Number(process.env.BENCH_BUDGET_MS ?? 3000);
await initBackend({ prefer: 'wasm', nativeGemm: false });
const { threads } = resolveNativeGemm(undefined);

const runners: { name: string; gemm: NativeGemm | null }[] = [];
const loads: [string, () => NativeGemm | Error][] = GEMM_PROVIDERS.map((p) => [p.name, () => p.load(threads)]);
loads.push(['mlas (N-API binding)', () => loadMlasGemm(threads, 'binding')]);
for (const [name, load] of loads) {
  const loaded = load();
  if (loaded instanceof Error) console.log(`${name}: not available (${loaded.message})`);
  else runners.push({ name: loaded.description, gemm: loaded });
}
runners.push({ name: 'XNNPACK (wasm, 1 thread)', gemm: null });

/** [label, a shape, b shape, transposeA, transposeB] */
const CASES: [string, number[], number[], boolean, boolean][] = [
  ['tiny (per-call cost)', [8, 8], [8, 8], false, false],
  ['around BLAS_MIN_MACS', [64, 32], [32, 16], false, false],
  ['recurrent h·Wh (decoder step)', [64, 512], [512, 1536], false, false],
  ['its gradient dG·Whᵀ', [64, 1536], [512, 1536], false, true],
  ['attention query s·Wa', [64, 512], [512, 512], false, false],
  ['encoder step h·Wh', [64, 256], [256, 768], false, false],
  ['logits f·W', [1856, 512], [512, 5921], false, false],
  ['dW = fᵀ·dZ', [1856, 512], [1856, 5921], true, false],
  ['dF = dZ·Wᵀ', [1856, 5921], [512, 5921], false, true],
  ['Transformer: q·Wq', [4096, 256], [256, 256], false, false],
  ['Transformer: feed-forward in', [4096, 256], [256, 1024], false, false],
  ['Transformer: its dW = xᵀ·dY', [4096, 256], [4096, 1024], true, false],
  ['Transformer: logits f·W', [2780, 256], [256, 13643], false, false],
  ['Transformer: dF = dZ·Wᵀ', [2780, 13643], [256, 13643], false, true],
  ['Transformer: attention q·kᵀ, batched', [780, 21, 64], [780, 21, 64], false, true],
];

const rand = (shape: number[]) => tf.randomUniform(shape, -1, 1, 'float32', 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

const rows: string[][] = [];
for (const [label, aShape, bShape, tA, tB] of CASES) {
  const a = rand(aShape);
  const b = rand(bShape);
  const [a0, a1] = aShape.slice(-2);
  const [b0, b1] = bShape.slice(-2);
  const [M, K, N] = [tA ? a1 : a0, tA ? a0 : a1, tB ? b0 : b1];
  const batch = aShape.length > 2 ? aShape[0] : 1;
  const times = runners.map(() => [] as number[]);
  // Every product through each runner, small ones too (training sends those below minMacs to XNNPACK).
  const forced = runners.map((r) => (r.gemm == null ? null : { ...r.gemm, minMacs: 0, minEntryMacs: 0 }));
  const once = (k: number) => {
    setNativeGemm(forced[k]);
    const t0 = performance.now();
    const y = tf.matMul(a, b, tA, tB);
    const ms = performance.now() - t0;
    y.dispose();
    return ms;
  };
  runners.forEach((_, k) => once(k)); // warm-up (XNNPACK packs, transposed copies are cached)
  const started = performance.now();
  do runners.forEach((_, k) => times[k].push(once(k)));
  while (performance.now() - started < BUDGET_MS && times[0].length < 200);
  const meds = times.map(median);
  rows.push([
    label,
    `${batch > 1 ? `${batch} × ` : ''}[${M}×${K}]·[${K}×${N}]`,
    ...meds.map(
      (ms, k) =>
        `${ms.toFixed(2)} ms, ${((2 * batch * M * K * N) / ms / 1e6).toFixed(0)} GFLOP/s${k > 0 ? `, ${(ms / meds[0]).toFixed(2)}×` : ''}`,
    ),
  ]);
  tf.dispose([a, b]);
}
setNativeGemm(null);

console.log(
  `\nGEMMs through frost's wasm BatchMatMul, median per call (runs interleaved; ratios: time over ${runners[0].name}'s)\n`,
);
const header = ['product', 'shape', ...runners.map((r) => r.name)];
console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
