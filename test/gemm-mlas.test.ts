/**
 * MLAS's two doors (train/backend/kernels/gemm-mlas.ts): onnxruntime's C API through koffi, which reads and writes
 * the caller's memory in place, and the N-API binding, which copies each output back. Both must give a float64
 * reference's products for every transpose, on views inside a larger buffer (as the wasm heap hands them over),
 * without touching the memory around the output; a call whose buffers do not fit its dimensions is refused with
 * onnxruntime's message.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadMlasGemm, type MlasDoor } from '../train/backend/kernels/gemm-mlas.ts';
import type { NativeGemm } from '../train/backend/kernels/native-gemm.ts';
import { loadOrtCApi } from '../train/backend/kernels/ort-c-api.ts';

const GUARD = 12345.5;

function reference(A: Float32Array, B: Float32Array, M: number, K: number, N: number, tA: boolean, tB: boolean) {
  const out = new Float64Array(M * N);
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += (tA ? A[k * M + i] : A[i * K + k]) * (tB ? B[j * K + k] : B[k * N + j]);
      out[i * N + j] = s;
    }
  return out;
}

/** Operands and output as views at odd offsets of one buffer, guard values around the output. */
function heapViews(M: number, K: number, N: number, shared: boolean) {
  const floats = M * K + K * N + M * N + 64;
  const buffer = shared ? new SharedArrayBuffer(floats * 4) : new ArrayBuffer(floats * 4);
  const all = new Float32Array(buffer);
  let seed = 7;
  for (let i = 0; i < all.length; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    all[i] = seed / 2 ** 30 - 1;
  }
  const A = new Float32Array(buffer, 4 * 3, M * K);
  const B = new Float32Array(buffer, 4 * (3 + M * K + 5), K * N);
  const yStart = 3 + M * K + 5 + K * N + 7;
  const Y = new Float32Array(buffer, 4 * yStart, M * N);
  all[yStart - 1] = GUARD;
  all[yStart + M * N] = GUARD;
  return { A, B, Y, before: () => all[yStart - 1], after: () => all[yStart + M * N] };
}

function load(door: MlasDoor, t: { skip(message: string): void }): NativeGemm | null {
  const gemm = loadMlasGemm(2, door);
  if (gemm instanceof Error) {
    t.skip(`MLAS through the ${door} does not load here: ${gemm.message}`);
    return null;
  }
  return gemm;
}

for (const door of ['c-api', 'binding'] as const) {
  test(`MLAS through the ${door}: every transpose matches float64 on views inside a larger buffer, its neighbours untouched`, (t) => {
    const gemm = load(door, t);
    if (gemm == null) return;
    assert.match(gemm.description, door === 'c-api' ? /MLAS \(C API\)/ : /MLAS \(N-API binding, outputs copied\)/);
    const [M, K, N] = [67, 129, 45];
    for (const shared of [false, true])
      for (const [tA, tB] of [
        [false, false],
        [true, false],
        [false, true],
        [true, true],
      ] as const) {
        const { A, B, Y, before, after } = heapViews(M, K, N, shared);
        gemm.gemm(A, B, Y, M, K, N, tA, tB);
        const ref = reference(A, B, M, K, N, tA, tB);
        let worst = 0;
        for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(Y[i] - ref[i]) / (1 + Math.abs(ref[i])));
        assert.ok(worst < 1e-5, `${door} shared=${shared} tA=${tA} tB=${tB}: off by ${worst}`);
        assert.equal(before(), GUARD, 'wrote before the output');
        assert.equal(after(), GUARD, 'wrote after the output');
      }
    gemm.dispose();
  });
}

test('the C API door takes smaller products than the binding (its call costs less) and names its version', (t) => {
  const viaC = load('c-api', t);
  const viaBinding = load('binding', t);
  if (viaC == null || viaBinding == null) return;
  assert.ok(viaC.minMacs < viaBinding.minMacs);
  const api = loadOrtCApi();
  assert.ok(!(api instanceof Error));
  assert.match(api.version, /^\d+\.\d+\.\d+/);
  assert.ok(viaC.description.includes(`onnxruntime-node ${api.version} MLAS`), viaC.description);
  viaC.dispose();
  viaBinding.dispose();
});

test("a product whose output buffer is shorter than its dimensions is refused with onnxruntime's message", (t) => {
  const gemm = load('c-api', t);
  if (gemm == null) return;
  const A = new Float32Array(6 * 4).fill(1);
  const B = new Float32Array(4 * 5).fill(1);
  const Y = new Float32Array(6 * 5 - 1);
  assert.throws(() => gemm.gemm(A, B, Y, 6, 4, 5, false, false), /^Error: onnxruntime \w+: .+/);
  // The session still runs well-formed products afterwards.
  const Y2 = new Float32Array(6 * 5);
  gemm.gemm(A, B, Y2, 6, 4, 5, false, false);
  assert.deepEqual([...new Set(Y2)], [4]);
  gemm.dispose();
});
