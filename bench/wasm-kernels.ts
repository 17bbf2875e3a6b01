/**
 * Stock tfjs-backend-wasm kernels vs frost's (train/backend/wasm-kernels.ts), side by side in one
 * process on shapes of a training step (batch 64 × 20 target steps, d = 512, |V| = 6000; GRU input
 * 768 → 3·512 gates; attention over 20 source positions), interleaved runs, medians.
 *
 * Operands are reused run after run, as weights are across the time steps of a step: frost keeps
 * a transposed weight after its second use (TransposeCache), so its Wᵀ rows show the steady state.
 *
 *   node --import tsx bench/wasm-kernels.ts            (FROST_WASM_THREADS=2 for the threaded build)
 *   BENCH_BUDGET_MS=4000 … for more runs per case (default 2500 ms per case, 3 ≤ runs ≤ 15)
 */
import '@tensorflow/tfjs'; // gradients (tfjs-core alone registers none)
import * as tf from '@tensorflow/tfjs-core';
import type { KernelFunc, NamedAttrMap, TensorInfo } from '@tensorflow/tfjs-core';
import { initBackend } from '../train/backend/select.ts';
import { registerWasmKernels, stockWasmKernel, unregisterWasmKernels } from '../train/backend/wasm-kernels.ts';
import {
  DYNAMIC_CONV_GRAD_KERNEL,
  DYNAMIC_CONV_KERNEL,
  dynamicConvGradOps,
  dynamicConvOps,
} from '../models/layers/dynamic-conv.ts';

const BUDGET_MS = Number(process.env.BENCH_BUDGET_MS ?? 2500);

const info = await initBackend({ prefer: 'wasm' });
const backend = tf.backend();

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function disposeOutputs(out: TensorInfo | TensorInfo[] | tf.Tensor | tf.Tensor[]): void {
  for (const t of Array.isArray(out) ? out : [out]) {
    if (t instanceof tf.Tensor) t.dispose();
    else backend.disposeData(t.dataId);
  }
}

type Thunk = () => TensorInfo | TensorInfo[] | tf.Tensor | tf.Tensor[];

function timeOnce(run: Thunk): number {
  const t0 = performance.now();
  const out = run();
  const ms = performance.now() - t0;
  disposeOutputs(out);
  return ms;
}

/** Interleaves the two sides run by run; a side that throws is reported by its message. */
function compare(stock: Thunk | string, ours: Thunk): { stock: number | string; ours: number; runs: number } {
  let stockRun: Thunk | null = typeof stock === 'string' ? null : stock;
  let stockNote = typeof stock === 'string' ? stock : '';
  const first: number[] = [];
  if (stockRun != null) {
    try {
      first.push(timeOnce(stockRun));
    } catch (e) {
      stockNote = /not registered/.test(String(e)) ? 'not registered' : `throws: ${String(e).slice(0, 40)}`;
      stockRun = null;
    }
  }
  first.push(timeOnce(ours));
  const per = first.reduce((a, b) => a + b, 0);
  const runs = Math.max(3, Math.min(15, Math.floor(BUDGET_MS / Math.max(per, 1e-3))));
  const ts: number[] = [];
  const to: number[] = [];
  for (let r = 0; r < runs; r++) {
    if (stockRun != null) ts.push(timeOnce(stockRun));
    to.push(timeOnce(ours));
  }
  return { stock: stockRun != null ? median(ts) : stockNote, ours: median(to), runs };
}

function kernelThunk(fn: KernelFunc, inputs: Record<string, TensorInfo>, attrs: NamedAttrMap): Thunk {
  return () => fn({ inputs, backend, attrs }) as TensorInfo;
}

interface Row {
  label: string;
  shapes: string;
  stock: number | string;
  ours: number;
  runs: number;
  /** Floating-point operations per call, for frost's GFLOP/s. */
  flops?: number;
}
const rows: Row[] = [];

function matmulCase(label: string, aShape: number[], bShape: number[], transposeA: boolean, transposeB: boolean): void {
  const a = tf.randomNormal(aShape);
  const b = tf.randomNormal(bShape);
  const inputs = { a, b };
  const attrs = { transposeA, transposeB };
  const stock = stockWasmKernel('BatchMatMul');
  const ours = tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc;
  const r = compare(stock ? kernelThunk(stock, inputs, attrs) : 'missing', kernelThunk(ours, inputs, attrs));
  const t = (s: number[], flag: boolean) => `[${s.join(',')}]${flag ? 'ᵀ' : ''}`;
  rows.push({ label, shapes: `${t(aShape, transposeA)}·${t(bShape, transposeB)}`, ...r });
  tf.dispose([a, b]);
}

const N = 64 * 20; // target tokens per batch
const d = 512;
const V = 6000;
const B = 64;
const S = 20;

// Output projection f [N, d] · W [d, V] and its two gradients.
matmulCase('logits forward', [N, d], [d, V], false, false);
matmulCase('logits grad wrt f: dZ·Wᵀ', [N, V], [d, V], false, true);
matmulCase('logits grad wrt W: fᵀ·dZ', [N, d], [N, V], true, false);
// One decoder GRU step: [e; c] [B, 768] · Wx [768, 3·512], and its gradients.
matmulCase('GRU step forward', [B, 768], [768, 1536], false, false);
matmulCase('GRU step grad wrt x: dG·Wᵀ', [B, 1536], [768, 1536], false, true);
matmulCase('GRU step grad wrt W: xᵀ·dG', [B, 768], [B, 1536], true, false);
// Attention context α [B, 1, S] · annotations [B, S, 512] (batched) and its gradients.
matmulCase('attention context (batched)', [B, 1, S], [B, S, d], false, false);
matmulCase('attention grad wrt α (batched)', [B, 1, d], [B, S, d], false, true);
matmulCase('attention grad wrt ann. (batched)', [B, 1, S], [B, 1, d], true, false);
// Batched products big enough for per-entry XNNPACK calls (teacher-forced dot attention).
matmulCase('batched scores Q·Kᵀ', [B, S, d], [B, S, d], false, true);

// Embedding gradient: UnsortedSegmentSum of dy [N, e] into [V, e] rows.
{
  const e = 256;
  const dy = tf.randomNormal([N, e]);
  const ids = tf.randomUniform([N], 0, V, 'int32');
  const stock = stockWasmKernel('UnsortedSegmentSum');
  const ours = tf.getKernel('UnsortedSegmentSum', 'wasm')!.kernelFunc;
  const inputs = { x: dy, segmentIds: ids };
  const attrs = { numSegments: V };
  rows.push({
    label: 'UnsortedSegmentSum',
    shapes: `[${N},${e}] → [${V},${e}]`,
    ...compare(stock ? kernelThunk(stock, inputs, attrs) : 'not registered', kernelThunk(ours, inputs, attrs)),
  });

  // The whole gradient of an embedding lookup, through tf.grad.
  const E = tf.randomNormal([V, e]);
  const lookupGrad = () => tf.tidy(() => tf.grad((x: tf.Tensor) => tf.sum(tf.mul(tf.gather(x, ids), dy)))(E));
  unregisterWasmKernels();
  let stockGrad: Thunk | string;
  try {
    lookupGrad().dispose();
    stockGrad = lookupGrad;
  } catch (err) {
    stockGrad = /not registered/.test(String(err)) ? 'not registered' : `throws: ${String(err).slice(0, 40)}`;
  }
  registerWasmKernels();
  rows.push({
    label: 'grad of tf.gather (embedding)',
    shapes: `E [${V},${e}], ${N} ids`,
    ...compare(stockGrad, lookupGrad),
  });

  // What one would do without the kernel: oneHot(ids)ᵀ · dy, a transposeA MatMul.
  const oneHot = tf.oneHot(ids, V, 1, 0, 'float32');
  const stockMM = stockWasmKernel('BatchMatMul')!;
  const oursMM = tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc;
  const mmInputs = { a: oneHot, b: dy };
  const mmAttrs = { transposeA: true, transposeB: false };
  const r = compare(kernelThunk(stockMM, mmInputs, mmAttrs), kernelThunk(oursMM, mmInputs, mmAttrs));
  rows.push({ label: 'workaround oneHot(ids)ᵀ·dy', shapes: `[${N},${V}]ᵀ·[${N},${e}]`, ...r });
  tf.dispose([dy, ids, E, oneHot]);
}

// Copies that the stock kernels make: gather of embeddings, unstack of time-major projections,
// the tape's clone of each saved tensor (Identity).
function kernelCase(
  label: string,
  shapes: string,
  kernelName: string,
  inputs: Record<string, TensorInfo>,
  attrs: NamedAttrMap,
): void {
  const stock = stockWasmKernel(kernelName);
  const ours = tf.getKernel(kernelName, 'wasm')!.kernelFunc;
  rows.push({
    label,
    shapes,
    ...compare(stock ? kernelThunk(stock, inputs, attrs) : 'missing', kernelThunk(ours, inputs, attrs)),
  });
}
{
  const E = tf.randomNormal([V, 256]);
  const ids = tf.randomUniform([N], 0, V, 'int32');
  kernelCase(
    'embedding lookup (GatherV2)',
    `E [${V},256], ${N} ids`,
    'GatherV2',
    { x: E, indices: ids },
    { axis: 0, batchDims: 0 },
  );
  const proj = tf.randomNormal([S, B, 768]);
  kernelCase('tf.unstack (Unpack)', `[${S},${B},768] → ${S}×`, 'Unpack', { value: proj }, { axis: 0 });
  const feats = tf.randomNormal([N, 1280]);
  kernelCase(
    'tf.split, concat grad (SplitV)',
    `[${N},1280] → 3 pieces`,
    'SplitV',
    { x: feats },
    { numOrSizeSplits: [512, 512, 256], axis: 1 },
  );
  const W = tf.randomNormal([d, V]);
  kernelCase('tape clone of a weight (Identity)', `[${d},${V}]`, 'Identity', { x: W }, {});
  tf.dispose([E, ids, proj, feats, W]);
}

// Convolution gradients of one stage of the captioning CNN (models/layers/conv-encoder.ts): a
// batch of 6 images (32 captions), 64×64×32 → 32×32×64, 3×3, stride 2.
{
  const x = tf.randomNormal([6, 64, 64, 32]);
  const filter = tf.randomNormal([3, 3, 32, 64]);
  const dy = tf.randomNormal([6, 32, 32, 64]);
  const conv = {
    strides: [2, 2],
    pad: 'same',
    dataFormat: 'NHWC',
    dimRoundingMode: undefined,
  } as unknown as NamedAttrMap;
  const shapes = 'x [6,64,64,32], W [3,3,32,64], stride 2';
  kernelCase(
    'conv grad wrt W (Conv2DBackpropFilter)',
    shapes,
    'Conv2DBackpropFilter',
    { x, dy },
    { ...conv, filterShape: [3, 3, 32, 64] },
  );
  kernelCase(
    'conv grad wrt x (Conv2DBackpropInput)',
    shapes,
    'Conv2DBackpropInput',
    { dy, filter },
    { ...conv, inputShape: [6, 64, 64, 32] },
  );
  tf.dispose([x, filter, dy]);
}

// The lightweight/dynamic convolution (models/layers/dynamic-conv.ts) of a small lightconv/dynamicconv layer:
// 64 × 64 tokens, C 256, H 4, causal; frost's kernels against the tfjs-ops fallback they replace ("stock" column).
// Flops: 2·B·T·C·K forward (a mul-add per weight and channel), twice that backward (dx and dweights).
// V8 first runs a wasm function as baseline (Liftoff) code and swaps in optimised code after some calls, so each
// kernel is warmed up first: training calls it thousands of times.
{
  const [cB, cT, cC, cH] = [64, 64, 256, 4];
  const x = tf.randomNormal([cB, cT, cC]);
  const dy = tf.randomNormal([cB, cT, cC]);
  const forward = tf.getKernel(DYNAMIC_CONV_KERNEL, 'wasm')!.kernelFunc;
  const backward = tf.getKernel(DYNAMIC_CONV_GRAD_KERNEL, 'wasm')!.kernelFunc;
  const warm = (run: Thunk): Thunk => {
    const t0 = performance.now();
    for (let i = 0; i < 10 || performance.now() - t0 < 500; i++) timeOnce(run);
    return run;
  };
  for (const K of [3, 15, 31]) {
    for (const shared of [false, true]) {
      const weights = tf.randomNormal(shared ? [cH, K] : [cB, cT, cH, K]);
      const padLeft = K - 1;
      const shapes = `x [${cB},${cT},${cC}], H ${cH}, K ${K}, ${shared ? 'shared' : 'dynamic'}`;
      const flops = 2 * cB * cT * cC * K;
      const fwd = compare(
        () => tf.tidy(() => dynamicConvOps(x, weights, padLeft)),
        warm(kernelThunk(forward, { x, weights }, { padLeft })),
      );
      rows.push({ label: 'dynamic conv forward', shapes, ...fwd, flops });
      const bwd = compare(
        () => tf.tidy(() => dynamicConvGradOps(dy, x, weights, padLeft)),
        warm(kernelThunk(backward, { dy, x, weights }, { padLeft })),
      );
      rows.push({ label: 'dynamic conv backward', shapes, ...bwd, flops: 2 * flops });
      weights.dispose();
    }
  }
  tf.dispose([x, dy]);
}

const fmt = (x: number | string) => (typeof x === 'number' ? (x < 10 ? x.toFixed(2) : x.toFixed(1)) : x);
const header = ['case', 'shapes', 'stock ms', 'frost ms', 'speed-up', 'frost GFLOP/s', 'runs'];
const table = rows.map((r) => [
  r.label,
  r.shapes,
  fmt(r.stock),
  fmt(r.ours),
  typeof r.stock === 'number' ? `${(r.stock / r.ours).toFixed(1)}×` : '—',
  r.flops != null ? (r.flops / r.ours / 1e6).toFixed(1) : '',
  String(r.runs),
]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
const line = (cells: string[]) =>
  cells.map((c, i) => (i >= 2 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ');
console.log(
  `\nwasm kernels, ${info.threads ?? 1} XNNPACK thread(s), median ms per call (stock and frost interleaved)\n`,
);
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const row of table) console.log(line(row));
