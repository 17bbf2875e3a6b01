/**
 * frost's wasm kernels (train/backend/wasm-kernels.ts) against plain-JS float64 references.
 *
 * Tolerance: a float32 dot product of K terms is off by up to ≈ K·ε·Σ|aᵢbᵢ| in the worst case, so
 * results are compared relative to that scale: |got − ref| ≤ 1e-5 · (Σ|aᵢbᵢ| + |ref|) + 1e-6.
 */
import '@tensorflow/tfjs'; // gradient functions (tfjs-core's Node build registers none)
import { createRequire } from 'node:module';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { BACKEND_CANDIDATES, initBackend } from '../train/backend/select.ts';
import {
  registerWasmKernels,
  stockWasmKernel,
  unregisterWasmKernels,
  WASM_KERNEL_OVERRIDES,
} from '../train/backend/wasm-kernels.ts';
import { SLICE_MIN_MACS } from '../train/backend/kernels/batch-matmul.ts';
import { asWasmBackend } from '../train/backend/kernels/wasm-internals.ts';
import { transposeCache } from '../train/backend/kernels/transpose.ts';
import { runScriptInChild } from './helpers/child-script.ts';
import { scaledDiff, withMode } from './helpers/tensor-compare.ts';
import {
  DYNAMIC_CONV_GRAD_KERNEL,
  DYNAMIC_CONV_KERNEL,
  dynamicConv,
  dynamicConvGradOps,
  dynamicConvOps,
} from '../models/layers/dynamic-conv.ts';

const info = await initBackend({ prefer: 'wasm', quiet: true });
const RTOL = 1e-5;

let seed = 12345;
function rand(): number {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
}
function randArray(n: number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = rand() * 2 - 1;
  return a;
}
function randTensor(shape: number[]): tf.Tensor {
  return tf.tensor(randArray(shape.reduce((p, n) => p * n, 1)), shape);
}
const prod = (s: number[]) => s.reduce((p, n) => p * n, 1);

/** Float64 batched matmul with numpy broadcasting of the batch axes; also returns Σ|a·b| per entry. */
function refMatMul(
  a: Float32Array,
  aShape: number[],
  b: Float32Array,
  bShape: number[],
  tA: boolean,
  tB: boolean,
): { out: Float64Array; scale: Float64Array; shape: number[] } {
  const [ar, ac] = aShape.slice(-2);
  const [br, bc] = bShape.slice(-2);
  const M = tA ? ac : ar;
  const K = tA ? ar : ac;
  const N = tB ? br : bc;
  const aBatch = aShape.slice(0, -2);
  const bBatch = bShape.slice(0, -2);
  const rank = Math.max(aBatch.length, bBatch.length);
  const batch: number[] = [];
  for (let i = 0; i < rank; i++) {
    const x = aBatch[i - (rank - aBatch.length)] ?? 1;
    const y = bBatch[i - (rank - bBatch.length)] ?? 1;
    batch.push(Math.max(x, y));
  }
  const flatIndex = (own: number[], o: number) => {
    let rem = o;
    let flat = 0;
    let mul = 1;
    for (let d = rank - 1; d >= 0; d--) {
      const c = rem % batch[d];
      rem = Math.floor(rem / batch[d]);
      const od = d - (rank - own.length);
      if (od >= 0) {
        flat += (own[od] === 1 ? 0 : c) * mul;
        mul *= own[od];
      }
    }
    return flat;
  };
  const total = prod(batch);
  const out = new Float64Array(total * M * N);
  const scale = new Float64Array(total * M * N);
  for (let o = 0; o < total; o++) {
    const ao = flatIndex(aBatch, o) * ar * ac;
    const bo = flatIndex(bBatch, o) * br * bc;
    for (let i = 0; i < M; i++) {
      for (let j = 0; j < N; j++) {
        let s = 0;
        let m = 0;
        for (let k = 0; k < K; k++) {
          const av = tA ? a[ao + k * ac + i] : a[ao + i * ac + k];
          const bv = tB ? b[bo + j * bc + k] : b[bo + k * bc + j];
          s += av * bv;
          m += Math.abs(av * bv);
        }
        out[o * M * N + i * N + j] = s;
        scale[o * M * N + i * N + j] = m;
      }
    }
  }
  return { out, scale, shape: [...batch, M, N] };
}

function assertClose(
  got: ArrayLike<number>,
  ref: ArrayLike<number>,
  scale: ArrayLike<number> | null,
  what: string,
): void {
  assert.equal(got.length, ref.length, `${what}: length`);
  for (let i = 0; i < ref.length; i++) {
    const tol = RTOL * ((scale ? scale[i] : 0) + Math.abs(ref[i])) + 1e-6;
    if (!(Math.abs(got[i] - ref[i]) <= tol)) {
      assert.fail(`${what}: element ${i}: got ${got[i]}, expected ${ref[i]} (tolerance ${tol.toExponential(2)})`);
    }
  }
}

function checkMatMul(aShape: number[], bShape: number[], tA: boolean, tB: boolean): void {
  const a = randTensor(aShape);
  const b = randTensor(bShape);
  const ref = refMatMul(a.dataSync() as Float32Array, aShape, b.dataSync() as Float32Array, bShape, tA, tB);
  const c = tf.matMul(a, b, tA, tB);
  const what = `matMul ${JSON.stringify(aShape)}${tA ? 'ᵀ' : ''} · ${JSON.stringify(bShape)}${tB ? 'ᵀ' : ''}`;
  assert.deepEqual(c.shape, ref.shape, `${what}: shape`);
  assertClose(c.dataSync(), ref.out, ref.scale, what);
  tf.dispose([a, b, c]);
}

const FLAGS: Array<[boolean, boolean]> = [
  [false, false],
  [true, false],
  [false, true],
  [true, true],
];

/** [..., M, K] for a (before its transpose flag) and [..., K, N] for b. */
function shapes(
  aBatch: number[],
  bBatch: number[],
  M: number,
  K: number,
  N: number,
  tA: boolean,
  tB: boolean,
): [number[], number[]] {
  return [
    [...aBatch, ...(tA ? [K, M] : [M, K])],
    [...bBatch, ...(tB ? [N, K] : [K, N])],
  ];
}

test('backend: wasm with frost kernels, one line of info', () => {
  assert.equal(info.name, 'wasm');
  assert.equal(info.package, '@tensorflow/tfjs-backend-wasm');
  assert.ok(typeof info.threads === 'number' && info.threads >= 1);
  assert.equal(tf.getBackend(), 'wasm');
  for (const name of WASM_KERNEL_OVERRIDES) assert.ok(tf.getKernel(name, 'wasm') != null, name);
});

test('backend candidates: native first, wasm next, cpu only when named', () => {
  assert.deepEqual(
    BACKEND_CANDIDATES.map((c) => c.package),
    [
      '@tensorflow/tfjs-node-gpu',
      '@tensorflow/tfjs-node',
      '@tensorflow/tfjs-backend-wasm',
      '@tensorflow/tfjs-backend-cpu',
    ],
  );
  assert.deepEqual(
    BACKEND_CANDIDATES.filter((c) => c.explicitOnly).map((c) => c.name),
    ['cpu'],
  );
});

test("prefer: 'tensorflow' without tfjs-node says what to install", async (t) => {
  const require = createRequire(import.meta.url);
  const installed = ['@tensorflow/tfjs-node', '@tensorflow/tfjs-node-gpu'].some((p) => {
    try {
      require.resolve(p);
      return true;
    } catch {
      return false;
    }
  });
  if (installed) return t.skip('tfjs-node is installed here');
  await assert.rejects(
    initBackend({ prefer: 'tensorflow', quiet: true }),
    /tfjs-node: not installed[\s\S]*install @tensorflow\/tfjs-node/,
  );
  assert.equal(tf.getBackend(), 'wasm');
});

test('matMul 2D, all four transpose combinations, odd sizes', () => {
  for (const [M, K, N] of [
    [1, 1, 1],
    [3, 5, 7],
    [37, 53, 29],
    [65, 130, 67],
    [200, 70, 129],
  ]) {
    for (const [tA, tB] of FLAGS) checkMatMul(...shapes([], [], M, K, N, tA, tB), tA, tB);
  }
});

test('matMul batched 3D: per-entry XNNPACK path and tiny stock path, all transposes', () => {
  const big: [number, number, number] = [33, 70, 65]; // > SLICE_MIN_MACS per entry
  const tiny: [number, number, number] = [1, 20, 51]; // < SLICE_MIN_MACS
  assert.ok(big[0] * big[1] * big[2] >= SLICE_MIN_MACS && tiny[0] * tiny[1] * tiny[2] < SLICE_MIN_MACS);
  for (const [M, K, N] of [big, tiny, [20, 1, 51] as [number, number, number]]) {
    for (const [tA, tB] of FLAGS) checkMatMul(...shapes([3], [3], M, K, N, tA, tB), tA, tB);
  }
});

test('matMul batch broadcasting: b batch 1 (folded), a batch 1, 4D cross broadcast', () => {
  for (const [tA, tB] of FLAGS) {
    checkMatMul(...shapes([4], [1], 17, 33, 66, tA, tB), tA, tB);
    checkMatMul(...shapes([4], [], 17, 33, 66, tA, tB), tA, tB);
    checkMatMul(...shapes([1], [4], 40, 33, 66, tA, tB), tA, tB);
    checkMatMul(...shapes([2, 1], [1, 3], 40, 41, 42, tA, tB), tA, tB);
    checkMatMul(...shapes([2, 3], [2, 3], 9, 8, 7, tA, tB), tA, tB);
  }
});

test('matMul with an empty inner dimension gives zeros', () => {
  const c = tf.matMul(tf.zeros([3, 0]), tf.zeros([0, 4]));
  assert.deepEqual(Array.from(c.dataSync()), new Array(12).fill(0));
  const d = tf.matMul(tf.zeros([2, 0, 3]), tf.zeros([2, 4, 0]), true, true);
  assert.deepEqual(d.shape, [2, 3, 4]);
  assert.deepEqual(Array.from(d.dataSync()), new Array(24).fill(0));
  tf.dispose([c, d]);
});

test('the transposed copy of a reused weight is kept, and dropped when the weight goes', () => {
  const backend = asWasmBackend(tf.backend());
  const cache = transposeCache(backend);
  cache.clear();
  const before = tf.engine().backend.numDataIds();
  const W = randTensor([48, 96]);
  const x = randTensor([5, 96]);
  const ref = refMatMul(x.dataSync() as Float32Array, [5, 96], W.dataSync() as Float32Array, [48, 96], false, true);
  for (let step = 0; step < 4; step++) {
    const y = tf.matMul(x, W, false, true);
    assertClose(y.dataSync(), ref.out, ref.scale, `x·Wᵀ step ${step}`);
    y.dispose();
  }
  assert.equal(cache.size, 1);
  tf.dispose([W, x]);
  cache.sweep();
  assert.equal(cache.size, 0);
  assert.equal(tf.engine().backend.numDataIds(), before);
});

test('_FusedMatMul with transposes, batches, bias and activations (stock wasm gets the bias wrong)', () => {
  const acts: Array<[string, (v: number) => number]> = [
    ['linear', (v) => v],
    ['relu', (v) => Math.max(0, v)],
    ['sigmoid', (v) => 1 / (1 + Math.exp(-v))],
    ['leakyrelu', (v) => (v < 0 ? 0.1 * v : v)],
  ];
  let n = 0;
  for (const [tA, tB] of FLAGS) {
    for (const [aBatch, bBatch] of [
      [[], []],
      [[3], [1]],
      [[2], [2]],
    ] as Array<[number[], number[]]>) {
      for (const biasShape of [[21], [1], null]) {
        const [activation, f] = acts[n++ % acts.length];
        const [aShape, bShape] = shapes(aBatch, bBatch, 19, 23, 21, tA, tB);
        const a = randTensor(aShape);
        const b = randTensor(bShape);
        const bias = biasShape ? randTensor(biasShape) : undefined;
        const ref = refMatMul(a.dataSync() as Float32Array, aShape, b.dataSync() as Float32Array, bShape, tA, tB);
        const bv = bias ? bias.dataSync() : null;
        const expected = ref.out.map((v, i) => f(v + (bv ? bv[bv.length === 1 ? 0 : i % 21] : 0)));
        const c = tf.fused.matMul({
          a,
          b,
          transposeA: tA,
          transposeB: tB,
          bias,
          activation: activation as tf.fused.Activation,
          leakyreluAlpha: 0.1,
        });
        assert.deepEqual(c.shape, ref.shape);
        assertClose(
          c.dataSync(),
          expected,
          ref.scale,
          `fused ${activation} ${JSON.stringify(aShape)}·${JSON.stringify(bShape)} ${tA} ${tB} bias ${biasShape}`,
        );
        tf.dispose([a, b, c]);
        if (bias) bias.dispose();
      }
    }
  }
});

function refSegmentSum(x: ArrayLike<number>, ids: ArrayLike<number>, numSegments: number, inner: number): Float64Array {
  const out = new Float64Array(numSegments * inner);
  for (let r = 0; r < ids.length; r++) {
    const s = ids[r];
    if (s < 0 || s >= numSegments) continue;
    for (let j = 0; j < inner; j++) out[s * inner + j] += x[r * inner + j];
  }
  return out;
}

test('UnsortedSegmentSum: repeated ids, numSegments above the largest id, 2-D ids, int32', () => {
  const ids = [3, 0, 3, 3, 1, 0, 7];
  const x = randTensor([7, 5]);
  const out = tf.unsortedSegmentSum(x, tf.tensor1d(ids, 'int32'), 12);
  assert.deepEqual(out.shape, [12, 5]);
  assertClose(out.dataSync(), refSegmentSum(x.dataSync(), ids, 12, 5), null, 'segment sum');
  // rows 2, 4-6 and 8-11 get nothing
  assert.deepEqual(Array.from(out.dataSync().slice(2 * 5, 3 * 5)), [0, 0, 0, 0, 0]);

  const x3 = randTensor([2, 3, 4]);
  const ids2 = [
    [1, 1, 0],
    [4, 1, 2],
  ];
  // tf.unsortedSegmentSum types ids as 1-D; the kernel takes any prefix of x's shape.
  const ids2T = tf.tensor2d(ids2, [2, 3], 'int32');
  const out2 = tf
    .engine()
    .runKernel('UnsortedSegmentSum', { x: x3, segmentIds: ids2T }, { numSegments: 6 }) as tf.Tensor;
  assert.deepEqual(out2.shape, [6, 4]);
  assertClose(out2.dataSync(), refSegmentSum(x3.dataSync(), ids2.flat(), 6, 4), null, 'segment sum, 2-D ids');

  const xi = tf.tensor2d([1, 2, 3, 4, 5, 6], [3, 2], 'int32');
  const outI = tf.unsortedSegmentSum(xi, tf.tensor1d([2, 0, 2], 'int32'), 3);
  assert.equal(outI.dtype, 'int32');
  assert.deepEqual(Array.from(outI.dataSync()), [3, 4, 0, 0, 6, 8]);
  tf.dispose([x, out, x3, ids2T, out2, xi, outI]);
});

test('UnsortedSegmentSum drops out-of-range ids; stock wasm has no such kernel', () => {
  assert.equal(stockWasmKernel('UnsortedSegmentSum'), undefined);
  const out = tf.unsortedSegmentSum(tf.tensor1d([1, 2, 4, 8]), tf.tensor1d([0, -1, 5, 1], 'int32'), 2);
  assert.deepEqual(Array.from(out.dataSync()), [1, 8]);
  out.dispose();
});

test('gradient of an embedding lookup (tf.gather) matches a scatter-add reference', () => {
  const V = 50;
  const D = 7;
  const ids = [4, 9, 4, 0, 49, 4, 9];
  const E = randTensor([V, D]);
  const w = randTensor([ids.length, D]);
  const idsT = tf.tensor1d(ids, 'int32');
  const before = tf.memory().numTensors;
  const [g] = tf.grads((e: tf.Tensor) => tf.sum(tf.mul(tf.gather(e, idsT), w)))([E]);
  assert.deepEqual(g.shape, [V, D]);
  assertClose(g.dataSync(), refSegmentSum(w.dataSync(), ids, V, D), null, 'dE');
  g.dispose();
  assert.equal(tf.memory().numTensors, before);

  // axis 1: the gradient transposes with a real permutation.
  const X = randTensor([3, 10, 2]);
  const cols = [7, 7, 1];
  const colsT = tf.tensor1d(cols, 'int32');
  const up = randTensor([3, 3, 2]);
  const [gx] = tf.grads((x: tf.Tensor) => tf.sum(tf.mul(tf.gather(x, colsT, 1), up)))([X]);
  const u = up.dataSync();
  const expected = new Float64Array(3 * 10 * 2);
  for (let i = 0; i < 3; i++)
    for (let c = 0; c < 3; c++)
      for (let k = 0; k < 2; k++) expected[(i * 10 + cols[c]) * 2 + k] += u[(i * 3 + c) * 2 + k];
  assertClose(gx.dataSync(), expected, null, 'dX, axis 1');
  tf.dispose([E, w, idsT, X, colsT, up, gx]);
});

test('GatherV2 copies the right rows: axes 0-2, batchDims 1, int32, bad index', () => {
  const x = randTensor([4, 5, 3]);
  const xs = x.dataSync();
  const at = (i: number, j: number, k: number) => xs[(i * 5 + j) * 3 + k];
  const g0 = tf.gather(x, tf.tensor1d([3, 0, 3], 'int32'), 0);
  assert.deepEqual(g0.shape, [3, 5, 3]);
  assert.deepEqual(Array.from(g0.dataSync().slice(0, 15)), Array.from(xs.slice(45, 60)));
  const g1 = tf.gather(x, tf.tensor2d([4, 1, 1, 0], [2, 2], 'int32'), 1);
  assert.deepEqual(g1.shape, [4, 2, 2, 3]);
  assert.equal(g1.dataSync()[((2 * 2 + 1) * 2 + 0) * 3 + 2], at(2, 1, 2));
  const g2 = tf.gather(x, tf.tensor1d([2, 2, 0], 'int32'), 2);
  assert.deepEqual(g2.shape, [4, 5, 3]);
  assert.equal(g2.dataSync()[(1 * 5 + 4) * 3 + 2], at(1, 4, 0));
  const gb = tf.gather(x, tf.tensor2d([1, 4, 0, 0, 2, 2, 3, 1], [4, 2], 'int32'), 1, 1);
  assert.deepEqual(gb.shape, [4, 2, 3]);
  assert.equal(gb.dataSync()[(2 * 2 + 1) * 3 + 1], at(2, 2, 1));
  const xi = tf.tensor2d([1, 2, 3, 4, 5, 6], [3, 2], 'int32');
  assert.deepEqual(Array.from(tf.gather(xi, tf.tensor1d([2, 0], 'int32')).dataSync()), [5, 6, 1, 2]);
  assert.throws(() => tf.gather(x, tf.tensor1d([4], 'int32')), /not in \[0, 3\]/);
  tf.dispose([x, g0, g1, g2, gb, xi]);
});

function refSlice(x: ArrayLike<number>, shape: number[], begin: number[], size: number[]): number[] {
  const out: number[] = [];
  const strides = shape.map((_, i) => prod(shape.slice(i + 1)));
  const rec = (d: number, off: number) => {
    if (d === shape.length) {
      out.push(x[off]);
      return;
    }
    for (let i = 0; i < size[d]; i++) rec(d + 1, off + (begin[d] + i) * strides[d]);
  };
  rec(0, 0);
  return out;
}

test('Slice, SplitV and Unpack read only the slice, any rank and axis', () => {
  for (let trial = 0; trial < 60; trial++) {
    const rank = 1 + (trial % 5);
    const shape = Array.from({ length: rank }, () => 1 + Math.floor(rand() * 6));
    const begin = shape.map((n) => Math.floor(rand() * n));
    const size = shape.map((n, i) => (rand() < 0.3 ? n - begin[i] : 1 + Math.floor(rand() * (n - begin[i]))));
    const x = randTensor(shape);
    const s = tf.slice(x, begin, size);
    assert.deepEqual(s.shape, size);
    assert.deepEqual(
      Array.from(s.dataSync()),
      refSlice(x.dataSync(), shape, begin, size),
      `slice ${shape} ${begin} ${size}`,
    );
    tf.dispose([x, s]);
  }
  const x = randTensor([4, 3, 5]);
  const xs = x.dataSync();
  for (let axis = 0; axis < 3; axis++) {
    const parts = tf.unstack(x, axis);
    parts.forEach((p, i) => {
      const begin = [0, 0, 0];
      const size = [...x.shape];
      begin[axis] = i;
      size[axis] = 1;
      assert.deepEqual(Array.from(p.dataSync()), refSlice(xs, x.shape, begin, size), `unstack axis ${axis} part ${i}`);
    });
    tf.dispose(parts);
  }
  const pieces = tf.split(x, [2, 3], 2);
  assert.deepEqual(Array.from(pieces[1].dataSync()), refSlice(xs, x.shape, [0, 0, 2], [4, 3, 3]));
  const ints = tf.tensor2d([1, 2, 3, 4, 5, 6], [2, 3], 'int32');
  const si = tf.slice(ints, [0, 1], [2, 2]);
  assert.equal(si.dtype, 'int32');
  assert.deepEqual(Array.from(si.dataSync()), [2, 3, 5, 6]);
  tf.dispose([x, ints, si, ...pieces]);
});

test('Identity and size-1 Transpose share data and keep reference counts right', () => {
  const backend = asWasmBackend(tf.backend());
  const before = tf.engine().backend.numDataIds();
  const x = randTensor([3, 1, 4]);
  const values = Array.from(x.dataSync());
  const c = tf.clone(x);
  const t = tf.transpose(x, [1, 0, 2]);
  assert.equal(backend.dataIdMap.get(c.dataId)!.memoryOffset, backend.dataIdMap.get(x.dataId)!.memoryOffset);
  assert.deepEqual(t.shape, [1, 3, 4]);
  x.dispose();
  assert.deepEqual(Array.from(c.dataSync()), values);
  assert.deepEqual(Array.from(t.dataSync()), values);
  const real = tf.transpose(c, [2, 1, 0]);
  assert.deepEqual(real.shape, [4, 1, 3]);
  assert.equal(real.dataSync()[1], values[4]);
  tf.dispose([c, t, real]);
  assert.equal(tf.engine().backend.numDataIds(), before);
});

test('registerWasmKernels is idempotent; unregister restores the stock kernels', () => {
  const ours = tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc;
  registerWasmKernels();
  assert.equal(tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc, ours);
  unregisterWasmKernels();
  assert.equal(tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc, stockWasmKernel('BatchMatMul'));
  assert.equal(tf.getKernel('UnsortedSegmentSum', 'wasm'), undefined);
  registerWasmKernels();
  assert.notEqual(tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc, stockWasmKernel('BatchMatMul'));
  assert.ok(tf.getKernel('UnsortedSegmentSum', 'wasm') != null);
  checkMatMul([9, 12], [10, 12], false, true);
});

test('the other wasm build (threaded vs single-threaded) loads and multiplies correctly', () => {
  const other = info.threads === 1 ? 2 : 1;
  const script = `
    (async () => {
      const tf = await import('@tensorflow/tfjs-core');
      const { initBackend } = await import('./train/backend/select.ts');
      const info = await initBackend({ prefer: 'wasm', quiet: true, wasmThreads: ${other} });
      const a = tf.tensor2d([1, 2, 3, 4, 5, 6], [3, 2]);
      const c = tf.matMul(a, a, true, false);
      console.log(JSON.stringify({ threads: info.threads, c: Array.from(c.dataSync()) }));
    })();`;
  const out = runScriptInChild<{ threads: number; c: number[] }>(script, 60_000);
  assert.deepEqual(out.c, [35, 44, 44, 56]);
  assert.equal(out.threads, other);
});

interface ConvCase {
  B: number;
  T: number;
  H: number;
  R: number;
  K: number;
  padLeft: number;
}

/**
 * Float64 y, dx and dweights of the dynamic convolution (models/layers/dynamic-conv.ts), each with Σ|terms| for
 * the tolerance, by the contract's definition: every (b, t, h, k) whose source row t + k − padLeft is in [0, T).
 */
function refDynamicConv(
  { B, T, H, R, K, padLeft }: ConvCase,
  shared: boolean,
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  dy: ArrayLike<number>,
) {
  const C = H * R;
  const y = new Float64Array(B * T * C);
  const yScale = new Float64Array(B * T * C);
  const dx = new Float64Array(B * T * C);
  const dxScale = new Float64Array(B * T * C);
  const dw = new Float64Array(w.length);
  const dwScale = new Float64Array(w.length);
  for (let b = 0; b < B; b++)
    for (let t = 0; t < T; t++)
      for (let h = 0; h < H; h++)
        for (let k = 0; k < K; k++) {
          const src = t + k - padLeft;
          if (src < 0 || src >= T) continue;
          const wi = shared ? h * K + k : ((b * T + t) * H + h) * K + k;
          for (let r = 0; r < R; r++) {
            const at = (b * T + t) * C + h * R + r;
            const from = (b * T + src) * C + h * R + r;
            y[at] += w[wi] * x[from];
            yScale[at] += Math.abs(w[wi] * x[from]);
            dx[from] += w[wi] * dy[at];
            dxScale[from] += Math.abs(w[wi] * dy[at]);
            dw[wi] += dy[at] * x[from];
            dwScale[wi] += Math.abs(dy[at] * x[from]);
          }
        }
  return { y, yScale, dx, dxScale, dw, dwScale };
}

// causal (K − 1), centred (⌊K/2⌋) and 0 offsets; K > T; T = 1; K = 1; R = 1, 3, 4, 16 and 5 (vector + tail)
const CONV_CASES: ConvCase[] = [
  { B: 2, T: 5, H: 2, R: 1, K: 3, padLeft: 2 },
  { B: 2, T: 5, H: 3, R: 3, K: 3, padLeft: 1 },
  { B: 1, T: 3, H: 2, R: 4, K: 7, padLeft: 0 },
  { B: 2, T: 6, H: 2, R: 16, K: 5, padLeft: 4 },
  { B: 3, T: 1, H: 2, R: 3, K: 3, padLeft: 1 },
  { B: 2, T: 4, H: 4, R: 4, K: 1, padLeft: 0 },
  { B: 1, T: 4, H: 1, R: 16, K: 9, padLeft: 4 },
  { B: 2, T: 3, H: 2, R: 5, K: 4, padLeft: 3 },
];

test('dynamic conv kernels: y, dx and dweights equal float64 references and the tfjs ops', () => {
  for (const c of CONV_CASES) {
    for (const shared of [true, false]) {
      const C = c.H * c.R;
      const what = `${JSON.stringify(c)} ${shared ? 'shared' : 'per-step'}`;
      tf.tidy(() => {
        const x = randTensor([c.B, c.T, C]);
        const weights = randTensor(shared ? [c.H, c.K] : [c.B, c.T, c.H, c.K]);
        const dy = randTensor([c.B, c.T, C]);
        const ref = refDynamicConv(c, shared, x.dataSync(), weights.dataSync(), dy.dataSync());
        const attrs = { padLeft: c.padLeft };
        const [y] = tf.engine().runKernel(DYNAMIC_CONV_KERNEL, { x, weights }, attrs) as tf.Tensor[];
        const [dx, dw] = tf.engine().runKernel(DYNAMIC_CONV_GRAD_KERNEL, { dy, x, weights }, attrs) as tf.Tensor[];
        assert.deepEqual(dw.shape, weights.shape, `${what}: dweights shape`);
        const [yOps] = dynamicConvOps(x, weights, c.padLeft);
        const [dxOps, dwOps] = dynamicConvGradOps(dy, x, weights, c.padLeft);
        for (const [got, name] of [
          [y, 'y'],
          [yOps, 'y (ops)'],
        ] as const)
          assertClose(got.dataSync(), ref.y, ref.yScale, `${what}: ${name}`);
        for (const [got, name] of [
          [dx, 'dx'],
          [dxOps, 'dx (ops)'],
        ] as const)
          assertClose(got.dataSync(), ref.dx, ref.dxScale, `${what}: ${name}`);
        for (const [got, name] of [
          [dw, 'dweights'],
          [dwOps, 'dweights (ops)'],
        ] as const)
          assertClose(got.dataSync(), ref.dw, ref.dwScale, `${what}: ${name}`);
      });
    }
  }
});

test('dynamic conv kernels refuse what convShape refuses', () => {
  tf.tidy(() => {
    const x = randTensor([2, 3, 8]);
    const run = (weights: tf.Tensor, padLeft: number) =>
      tf.engine().runKernel(DYNAMIC_CONV_KERNEL, { x, weights }, { padLeft });
    assert.throws(() => run(randTensor([2, 4, 2, 3]), 1), /do not match x/);
    assert.throws(() => run(randTensor([3, 3]), 1), /do not split into 3 heads/);
    assert.throws(() => run(randTensor([2, 3]), 3), /padLeft must be an integer in \[0, 3\)/);
    const dy = randTensor([2, 4, 8]);
    assert.throws(
      () => tf.engine().runKernel(DYNAMIC_CONV_GRAD_KERNEL, { dy, x, weights: randTensor([2, 3]) }, { padLeft: 0 }),
      /dy \[2, 4, 8\] must be x's/,
    );
  });
});

test("dynamicConv: values and gradients with the wasm kernels (fused 'auto') equal plain autodiff", async () => {
  for (const [c, shared] of [
    [{ B: 2, T: 6, H: 2, R: 3, K: 4, padLeft: 3 }, false],
    [{ B: 2, T: 5, H: 2, R: 4, K: 3, padLeft: 1 }, true],
  ] as const) {
    const C = c.H * c.R;
    const x = randTensor([c.B, c.T, C]) as tf.Tensor3D;
    const weights = randTensor(shared ? [c.H, c.K] : [c.B, c.T, c.H, c.K]);
    const upstream = randTensor([c.B, c.T, C]);
    const f = (xs: tf.Tensor, w: tf.Tensor) => tf.sum(tf.mul(dynamicConv(xs as tf.Tensor3D, w, c.padLeft), upstream));
    const run = (mode: 'auto' | 'unfused') => withMode(mode, () => tf.valueAndGrads(f)([x, weights]));
    const profile = await tf.profile(() => {
      const { value, grads } = run('auto');
      tf.dispose([value, ...grads]);
    });
    assert.ok(profile.kernelNames.includes(DYNAMIC_CONV_KERNEL), 'the forward kernel ran');
    assert.ok(profile.kernelNames.includes(DYNAMIC_CONV_GRAD_KERNEL), 'the gradient kernel ran');
    const ref = run('unfused');
    const got = run('auto');
    assert.ok(scaledDiff(got.value, ref.value) < 1e-5, `value, ${shared ? 'shared' : 'per-step'}`);
    got.grads.forEach((g, i) => assert.ok(scaledDiff(g, ref.grads[i]) < 1e-5, `gradient ${i}`));
    tf.dispose([x, weights, upstream, ref.value, got.value, ...ref.grads, ...got.grads]);
  }
});
