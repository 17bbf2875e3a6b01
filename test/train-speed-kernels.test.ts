/**
 * The training-speed changes against the generic ops they replace (no timings asserted here):
 *  - native GEMM (onnxruntime-node MLAS) vs XNNPACK and a float64 reference, every transpose
 *    combination and the batch folding it takes; batched products (multi-head attention's) entry by entry;
 *  - BatchMatMul with K = 1 (a broadcast Multiply) vs the stock kernel;
 *  - Tanh as 2σ(2x) − 1 vs the stock kernel and Math.tanh;
 *  - Sum over leading axes vs the stock kernel; OneHot in float32 (the stock kernel writes int bits);
 *  - the loss (softmax saved in the forward pass) vs autodiff through logSoftmax;
 *  - sharedWeightMatMul's gradients vs plain tf.matMul in a recurrence, including a weight that is
 *    a slice of a variable;
 *  - no tensor leak over 50 training steps of the tiny preset, for every head.
 */
import '@tensorflow/tfjs';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { sharedWeightMatMul } from '../models/layers/shared-matmul.ts';
import { maskedCrossEntropySum } from '../models/loss.ts';
import { initBackend } from '../train/backend/select.ts';
import { GEMM_PROVIDERS } from '../train/backend/kernels/gemm-providers.ts';
import { setNativeGemm, type NativeGemm } from '../train/backend/kernels/native-gemm.ts';
import { LEADING_SUM_MIN } from '../train/backend/kernels/sum.ts';
import { transposeCache } from '../train/backend/kernels/transpose.ts';
import { asWasmBackend } from '../train/backend/kernels/wasm-internals.ts';
import { stockWasmKernel } from '../train/backend/wasm-kernels.ts';
import { makeBatch, planBatches } from '../train/data/batches.ts';
import { Adam } from '../train/optim/adam.ts';
import { runScriptInChild } from './helpers/child-script.ts';
import { toyWordPairs } from './helpers/toy-pairs.ts';

await initBackend({ prefer: 'wasm', quiet: true });

let seed = 777;
function rand(): number {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
}
function randTensor(shape: number[], scale = 1): tf.Tensor {
  const n = shape.reduce((p, x) => p * x, 1);
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (rand() * 2 - 1) * scale;
  return tf.tensor(a, shape);
}

/** Runs fn with one wasm kernel swapped for the stock one (or another function). */
function withKernel<T>(name: string, kernelFunc: tf.KernelFunc | undefined, fn: () => T): T {
  const ours = tf.getKernel(name, 'wasm')!;
  tf.unregisterKernel(name, 'wasm');
  if (kernelFunc != null) tf.registerKernel({ ...ours, kernelFunc });
  try {
    return fn();
  } finally {
    if (kernelFunc != null) tf.unregisterKernel(name, 'wasm');
    tf.registerKernel(ours);
  }
}

function withoutNativeGemm<T>(fn: () => T): T {
  return withNativeGemm(null, fn);
}

function withNativeGemm<T>(gemm: NativeGemm | null, fn: () => T): T {
  const saved = setNativeGemm(gemm);
  try {
    return fn();
  } finally {
    setNativeGemm(saved);
  }
}

function maxScaledDiff(got: ArrayLike<number>, ref: ArrayLike<number>): number {
  let scale = 0;
  for (let i = 0; i < ref.length; i++) scale = Math.max(scale, Math.abs(ref[i]));
  let worst = 0;
  for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got[i] - ref[i]) / (scale || 1));
  return worst;
}

function refMatMul2d(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  M: number,
  K: number,
  N: number,
  tA: boolean,
  tB: boolean,
): Float64Array {
  const out = new Float64Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += (tA ? a[k * M + i] : a[i * K + k]) * (tB ? b[j * K + k] : b[k * N + j]);
      out[i * N + j] = s;
    }
  }
  return out;
}

for (const provider of GEMM_PROVIDERS) {
  test(`native GEMM '${provider.name}': matches XNNPACK and a float64 reference for all transposes`, (t) => {
    const native = provider.load(2);
    if (native instanceof Error) return t.skip(`'${provider.name}' does not load here: ${native.message}`);
    assert.equal(native.provider, provider.name);
    const [M, K, N] = [97, 130, 71];
    assert.ok(M * K * N >= native.minMacs, 'the product must be big enough to reach the runner');
    withNativeGemm(native, () => {
      for (const [tA, tB] of [
        [false, false],
        [true, false],
        [false, true],
        [true, true],
      ] as const) {
        const a = randTensor(tA ? [K, M] : [M, K]);
        const b = randTensor(tB ? [N, K] : [K, N]);
        const ref = refMatMul2d(a.dataSync(), b.dataSync(), M, K, N, tA, tB);
        const viaNative = tf.matMul(a, b, tA, tB);
        const viaXnn = withoutNativeGemm(() => tf.matMul(a, b, tA, tB));
        assert.ok(maxScaledDiff(viaNative.dataSync(), ref) < 1e-5, `native ${tA} ${tB}`);
        assert.ok(maxScaledDiff(viaXnn.dataSync(), ref) < 1e-5, `xnnpack ${tA} ${tB}`);
        tf.dispose([a, b, viaNative, viaXnn]);
      }
      // a's batch folded into rows (b shared), b transposed: one native GEMM.
      const a3 = randTensor([3, 40, 90]);
      const w = randTensor([120, 90]);
      const y = tf.matMul(a3, w, false, true);
      const yRef = withoutNativeGemm(() => tf.matMul(a3, w, false, true));
      assert.deepEqual(y.shape, [3, 40, 120]);
      assert.ok(maxScaledDiff(y.dataSync(), yRef.dataSync()) < 1e-5);
      tf.dispose([a3, w, y, yRef]);
    });
    native.dispose();
  });
}

for (const provider of GEMM_PROVIDERS) {
  test(`native GEMM '${provider.name}': batched products (multi-head attention's) in one call where it has one, else entry by entry; every transpose and a broadcast batch`, (t) => {
    const loaded = provider.load(2);
    if (loaded instanceof Error) return t.skip(`'${provider.name}' does not load here: ${loaded.message}`);
    let calls = 0;
    let batchedCalls = 0;
    const { batched } = loaded;
    const native: NativeGemm = {
      ...loaded,
      gemm: (...a) => {
        calls++;
        loaded.gemm(...a);
      },
      ...(batched != null
        ? {
            batched: {
              minMacs: batched.minMacs,
              gemm: (...a: Parameters<typeof batched.gemm>) => {
                batchedCalls++;
                batched.gemm(...a);
              },
            },
          }
        : {}),
    };
    // Attention-sized entries (q·kᵀ of 21 positions, 64 per head), and entries big enough for every provider.
    const sizes = [
      [21, 64, 21],
      [60, 48, 50],
    ].filter(([M, K, N]) => M * K * N >= native.minEntryMacs || batched != null);
    assert.ok(sizes.length > 0);
    withNativeGemm(native, () => {
      for (const [M, K, N] of sizes) {
        for (const [tA, tB] of [
          [false, false],
          [true, false],
          [false, true],
          [true, true],
        ] as const) {
          // [2, 3] × [2, 3], and [2, 3] × [1, 3] (b's first batch axis broadcast).
          for (const bBatch of [
            [2, 3],
            [1, 3],
          ]) {
            const a = randTensor([2, 3, ...(tA ? [K, M] : [M, K])]);
            const b = randTensor([...bBatch, ...(tB ? [N, K] : [K, N])]);
            const [before, batchedBefore] = [calls, batchedCalls];
            const y = tf.matMul(a, b, tA, tB);
            const what = `${M}×${K}×${N} ${tA} ${tB} ${bBatch}`;
            if (batched != null && bBatch[0] === 2) {
              assert.equal(batchedCalls - batchedBefore, 1, `one batched call for every entry (${what})`);
              assert.equal(calls, before, `no call per entry (${what})`);
            } else {
              const perEntry = M * K * N >= native.minEntryMacs ? 6 : 0;
              assert.equal(
                calls - before,
                perEntry,
                `one native call per output entry, or none below minEntryMacs (${what})`,
              );
            }
            const stock = withoutNativeGemm(() => tf.matMul(a, b, tA, tB));
            assert.deepEqual(y.shape, [2, 3, M, N]);
            const ad = a.dataSync();
            const bd = b.dataSync();
            const yd = y.dataSync();
            for (let e = 0; e < 6; e++) {
              const be = bBatch[0] === 1 ? e % 3 : e;
              const ref = refMatMul2d(
                ad.subarray(e * M * K, (e + 1) * M * K),
                bd.subarray(be * K * N, (be + 1) * K * N),
                M,
                K,
                N,
                tA,
                tB,
              );
              assert.ok(maxScaledDiff(yd.subarray(e * M * N, (e + 1) * M * N), ref) < 1e-5, `entry ${e}`);
            }
            assert.ok(maxScaledDiff(yd, stock.dataSync()) < 1e-5, 'native vs stock');
            tf.dispose([a, b, y, stock]);
          }
        }
      }
      // Too small a product stays with the stock loop.
      const [before, batchedBefore] = [calls, batchedCalls];
      tf.dispose(tf.matMul(randTensor([4, 3, 5]), randTensor([4, 5, 2])));
      assert.equal(calls, before);
      assert.equal(batchedCalls, batchedBefore);
    });
    loaded.dispose();
  });
}

test('BatchMatMul with K = 1 (outer products, batched and broadcast) matches the stock kernel', () => {
  const stock = stockWasmKernel('BatchMatMul')!;
  for (const [aShape, bShape, tA, tB] of [
    [[64, 1, 18], [64, 1, 512], true, false],
    [[5, 7, 1], [5, 1, 9], false, false],
    [[5, 1, 7], [5, 9, 1], true, true],
    [[7, 1], [1, 9], false, false],
    [[2, 3, 4, 1], [3, 1, 6], false, false],
  ] as Array<[number[], number[], boolean, boolean]>) {
    const a = randTensor(aShape);
    const b = randTensor(bShape);
    const ours = tf.matMul(a, b, tA, tB);
    const ref = withKernel('BatchMatMul', stock, () => tf.matMul(a, b, tA, tB));
    assert.deepEqual(ours.shape, ref.shape);
    assert.ok(maxScaledDiff(ours.dataSync(), ref.dataSync()) < 1e-6, `${aShape} ${bShape}`);
    tf.dispose([a, b, ours, ref]);
  }
});

test('Tanh (2σ(2x) − 1) is within 3e-7 of tanhf, keeps odd symmetry, ±1 and NaN', () => {
  const x = tf.concat([
    randTensor([20000], 6),
    randTensor([5000], 1e-3),
    tf.tensor1d([0, 30, -30, Infinity, -Infinity, NaN]),
  ]);
  const ours = tf.tanh(x).dataSync();
  const stock = withKernel('Tanh', stockWasmKernel('Tanh'), () => tf.tanh(x).dataSync());
  const xs = x.dataSync();
  for (let i = 0; i < xs.length - 1; i++) {
    assert.ok(
      Math.abs(ours[i] - Math.tanh(xs[i])) <= 3e-7,
      `tanh(${xs[i]}) = ${ours[i]}, Math.tanh ${Math.tanh(xs[i])}`,
    );
    assert.ok(Math.abs(ours[i] - stock[i]) <= 3e-7);
  }
  assert.deepEqual(Array.from(ours.slice(-6, -1)), [0, 1, -1, 1, -1]);
  assert.ok(Number.isNaN(ours[ours.length - 1]));
  x.dispose();
});

test('Sum over leading axes matches the stock kernel (keepDims, 3-D, int32 to stock)', () => {
  const stock = stockWasmKernel('Sum')!;
  for (const [shape, axis, keepDims] of [
    [[512, 300], 0, false],
    [[40, 30, 120], [0, 1], true],
    [[40, 30, 120], [1, 0], false],
    [[600, 300], 1, false], // trailing: stock path
  ] as Array<[number[], number | number[], boolean]>) {
    const x = randTensor(shape);
    assert.ok(x.size >= LEADING_SUM_MIN);
    const ours = tf.sum(x, axis, keepDims);
    const ref = withKernel('Sum', stock, () => tf.sum(x, axis, keepDims));
    assert.deepEqual(ours.shape, ref.shape);
    assert.ok(maxScaledDiff(ours.dataSync(), ref.dataSync()) < 1e-5, `${shape} ${axis}`);
    tf.dispose([x, ours, ref]);
  }
  const xi = tf.ones([600, 300], 'int32');
  assert.equal(tf.sum(xi, 0).dataSync()[5], 600);
  xi.dispose();
});

test('OneHot gives float32 ones (the stock wasm kernel writes int32 bit patterns)', () => {
  const ids = tf.tensor1d([2, 0, -1, 5], 'int32');
  const f = tf.oneHot(ids, 4, 1, 0, 'float32');
  assert.equal(f.dtype, 'float32');
  assert.deepEqual(Array.from(f.dataSync()), [0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  const i = tf.oneHot(ids, 3, 7, -1);
  assert.equal(i.dtype, 'int32');
  assert.deepEqual(Array.from(i.dataSync()), [-1, -1, 7, 7, -1, -1, -1, -1, -1, -1, -1, -1]);
  tf.dispose([ids, f, i]);
});

test('loss: value and gradient equal autodiff through logSoftmax + gather', () => {
  const N = 37;
  const V = 300;
  const z = randTensor([N, V], 8);
  const y = tf.tensor1d(
    Array.from({ length: N }, (_, i) => (i * 97) % V),
    'int32',
  );
  const mask = tf.tensor1d(
    Array.from({ length: N }, (_, i) => (i % 5 === 4 ? 0 : 1)),
    'float32',
  );
  const ours = tf.valueAndGrad((x: tf.Tensor) => maskedCrossEntropySum(x as tf.Tensor2D, y, mask))(z);
  const ref = tf.valueAndGrad((x: tf.Tensor) => {
    const logp = tf.logSoftmax(x);
    const picked = tf.sum(tf.mul(logp, tf.oneHot(y, V).toFloat()), 1);
    return tf.neg(tf.sum(tf.mul(picked, mask))) as tf.Scalar;
  })(z);
  const v = ours.value.dataSync()[0];
  const r = ref.value.dataSync()[0];
  assert.ok(Math.abs(v - r) <= 1e-5 * Math.abs(r), `loss ${v} vs ${r}`);
  assert.ok(maxScaledDiff(ours.grad.dataSync(), ref.grad.dataSync()) < 1e-5);
  tf.dispose([z, y, mask, ours.value, ours.grad, ref.value, ref.grad]);
});

test('sharedWeightMatMul: same values and gradients as tf.matMul through a recurrence', () => {
  const B = 6;
  const H = 12;
  const T = 5;
  const Wv = tf.variable(randTensor([H + 3, H], 0.5));
  const x0 = randTensor([T, B, H]);
  const h0 = randTensor([B, H]);
  const xs = tf.unstack(x0) as tf.Tensor2D[];
  // W is a slice of a variable, as the decoder's context part of Wx is.
  const run = (shared: boolean) =>
    tf.variableGrads(() => {
      const W = tf.slice(Wv, [3, 0], [H, H]) as tf.Tensor2D;
      const mm = shared ? sharedWeightMatMul(W) : (h: tf.Tensor2D) => tf.matMul(h, W);
      let h = h0 as tf.Tensor2D;
      let loss = tf.scalar(0);
      for (let t = 0; t < T; t++) {
        h = tf.tanh(tf.add(xs[t], mm(h))) as tf.Tensor2D;
        // Only some steps feed the loss directly; all feed it through the recurrence.
        if (t % 2 === 0) loss = tf.add(loss, tf.sum(tf.mul(h, h)));
      }
      return loss as tf.Scalar;
    }, [Wv]);
  const before = tf.memory().numTensors;
  const a = run(true);
  const b = run(false);
  assert.ok(Math.abs(a.value.dataSync()[0] - b.value.dataSync()[0]) < 1e-5);
  assert.ok(maxScaledDiff(a.grads[Wv.name].dataSync(), b.grads[Wv.name].dataSync()) < 1e-5);
  tf.dispose([a.value, b.value, ...Object.values(a.grads), ...Object.values(b.grads)]);
  assert.equal(tf.memory().numTensors, before, 'sharedWeightMatMul leaked tensors');
  // Without a gradient tape it is just the product.
  const W2 = randTensor([H, H]);
  const p = tf.tidy(() => sharedWeightMatMul(W2)(h0 as tf.Tensor2D));
  const q = tf.matMul(h0, W2);
  assert.deepEqual(Array.from(p.dataSync()), Array.from(q.dataSync()));
  tf.dispose([Wv, x0, h0, ...xs, W2, p, q]);
});

test('no tensor leak over 50 training steps of the tiny preset, every head', () => {
  const { pairs, sizes } = toyWordPairs({ seed: 2, train: 300 });
  const plan = planBatches(pairs, { seed: 1, maxSentences: 16 }, 0);
  for (const head of ['learned', 'tied', 'fixed-l2', 'hadamard', 'drill']) {
    const model = buildModel('rnn-attn', resolveArchConfig('rnn-attn', 'tiny'), sizes, { name: head }, 1);
    const adam = new Adam(model.params.learnable);
    const step = (i: number) => {
      const batch = makeBatch(pairs, plan[i % plan.length]);
      adam.minimize(() => tf.div(model.lossSum(batch, true), batch.tokens) as tf.Scalar);
    };
    // Backend data besides tensors: the kept transposed weights (TransposeCache), which follow the
    // weights Adam replaces each step, so their number may move; the rest must not.
    const cache = transposeCache(asWasmBackend(tf.backend()));
    const ownData = () => tf.engine().backend.numDataIds() - cache.size;
    step(0);
    const before = tf.memory().numTensors;
    const ids = ownData();
    for (let i = 1; i <= 50; i++) step(i);
    assert.equal(tf.memory().numTensors, before, `${head}: tensors grew`);
    assert.equal(ownData(), ids, `${head}: backend data grew`);
    adam.dispose();
    model.params.dispose();
  }
});

test("OpenBLAS's OpenMP threads are set to sleep before the library loads, unless the environment names a policy", (t) => {
  const blas = GEMM_PROVIDERS.find((p) => p.name === 'blas')!.load(1);
  if (blas instanceof Error) return t.skip(`no BLAS here: ${blas.message}`);
  blas.dispose();
  for (const [given, expected] of [
    [null, 'PASSIVE'],
    ['ACTIVE', 'ACTIVE'],
  ] as const) {
    const script = `
      (async () => {
        ${given == null ? 'delete process.env.OMP_WAIT_POLICY;' : `process.env.OMP_WAIT_POLICY = '${given}';`}
        const { blasProvider } = await import('./train/backend/kernels/gemm-blas.ts');
        const r = blasProvider.load(1);
        console.log(JSON.stringify({ loaded: !(r instanceof Error), policy: process.env.OMP_WAIT_POLICY ?? null }));
      })();`;
    const out = runScriptInChild<{ loaded: boolean; policy: string | null }>(script, 60_000);
    assert.deepEqual(out, { loaded: true, policy: expected }, `environment ${given ?? 'without a policy'}`);
  }
});

for (const provider of GEMM_PROVIDERS) {
  test(`native GEMM '${provider.name}' also works on the threaded wasm build (shared heap)`, (t) => {
    const loaded = provider.load(2);
    if (loaded instanceof Error) return t.skip(`'${provider.name}' does not load here: ${loaded.message}`);
    loaded.dispose();
    const script = `
    (async () => {
      process.env.FROST_NATIVE_GEMM = '${provider.name}';
      const tf = await import('@tensorflow/tfjs-core');
      const { initBackend } = await import('./train/backend/select.ts');
      const { nativeGemm } = await import('./train/backend/kernels/native-gemm.ts');
      const info = await initBackend({ prefer: 'wasm', quiet: true, wasmThreads: 2 });
      const a = tf.tensor2d(Array.from({ length: 120 * 90 }, (_, i) => ((i * 7) % 13) - 6), [120, 90]);
      const b = tf.tensor2d(Array.from({ length: 90 * 80 }, (_, i) => ((i * 5) % 11) - 5), [90, 80]);
      const c = tf.matMul(a, b).dataSync();
      const A = a.dataSync(), B = b.dataSync();
      let worst = 0;
      for (let i = 0; i < 120; i++) for (let j = 0; j < 80; j++) {
        let s = 0;
        for (let k = 0; k < 90; k++) s += A[i * 90 + k] * B[k * 80 + j];
        worst = Math.max(worst, Math.abs(s - c[i * 80 + j]));
      }
      console.log(JSON.stringify({ threads: info.threads, provider: nativeGemm()?.provider ?? null, worst }));
    })();`;
    const out = runScriptInChild<{ threads: number; provider: string | null; worst: number }>(script, 90_000);
    assert.equal(out.threads, 2);
    assert.equal(out.worst, 0); // small integers: exact in float32
    assert.equal(out.provider, provider.name, 'native GEMM was dropped after a failure on the threaded build');
  });
}
