/**
 * Large float32 GEMMs for the wasm backend run by onnxruntime-node's MLAS (native x86-64/ARM64
 * code: AVX2/AVX-512 FMA kernels and its own thread pool), in place on the wasm heap.
 *
 * Why: a training step of rnn-attn is ≈ 80% GEMM, and XNNPACK's wasm SIMD128 GEMM peaks at
 * 13-26 GFLOP/s per thread here (no FMA, 128-bit vectors), while MLAS runs the same products at
 * ≈ 50 GFLOP/s on one core of the same CPU (measured by bench/train-speed.ts's kernel probe).
 * onnxruntime-node is already a frost dependency (export parity, serving), so this is no new
 * install; it is a prebuilt N-API addon shipped inside the npm package.
 *
 * How: the package's N-API binding (onnxruntime-node/dist/binding, the "simple synchronized
 * inference session object wrap" its own async API sits on) runs a session synchronously, as a
 * tfjs kernel must. One tiny ONNX graph per transpose combination, a single Gemm with symbolic
 * dims (transA/transB attributes, so neither operand is copied to transpose it). Inputs are ORT
 * tensors over Float32Array views of the wasm heap (ORT reads them in place); the output is
 * pre-allocated the same way, over the output tensor's block on the heap, so MLAS writes the
 * result where tfjs expects it. (The binding also hands back a JS copy of the output, which is
 * dropped: one memcpy of the result, ≈ 3% of the GEMM's time at the sizes that come here.) The
 * threaded wasm build's heap is a SharedArrayBuffer, which the binding refuses: there the operands
 * and the result are copied through plain buffers.
 *
 * Off with FROST_NATIVE_GEMM=0 (or initBackend({ nativeGemm: false })); threads with
 * FROST_NATIVE_GEMM_THREADS (default: all of os.availableParallelism(), capped at 8). ORT's pool
 * is created with spinning off, so its threads sleep between kernels instead of burning a core
 * while the wasm side runs the step's small kernels.
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { GraphBuilder } from '../../../core/onnx/graph-builder.ts';

/** Below this many multiply-adds a call's fixed cost (≈ 50-60 µs) outweighs MLAS's speed-up. */
export const NATIVE_MIN_MACS = 1 << 19;

interface OrtTensorCtor {
  new (type: 'float32', data: Float32Array, dims: readonly number[]): unknown;
}

interface BindingSession {
  loadModel(buffer: ArrayBufferLike, byteOffset: number, byteLength: number, options: Record<string, unknown>): void;
  run(feeds: Record<string, unknown>, fetches: Record<string, unknown>, options: Record<string, unknown>): Record<string, unknown>;
  dispose(): void;
}

interface BindingModule {
  binding: { InferenceSession: new () => BindingSession };
  initOrt(): void;
}

export interface NativeGemm {
  readonly threads: number;
  /** One line for logs: what runs the GEMMs. */
  readonly description: string;
  /**
   * Y [M, N] = op(A) · op(B), op = transpose when the flag is set. A is [M, K] ([K, M] when tA),
   * B is [K, N] ([N, K] when tB); all three are row-major float32 views (of the wasm heap).
   */
  gemm(A: Float32Array, B: Float32Array, Y: Float32Array, M: number, K: number, N: number, tA: boolean, tB: boolean): void;
  dispose(): void;
}

function gemmModel(tA: boolean, tB: boolean): Uint8Array {
  const g = new GraphBuilder(`frost-gemm-${tA ? 't' : 'n'}${tB ? 't' : 'n'}`, { opset: 13 });
  const a = g.input('a', 'float32', tA ? ['k', 'm'] : ['m', 'k']);
  const b = g.input('b', 'float32', tB ? ['n', 'k'] : ['k', 'n']);
  g.output(g.op('Gemm', [a, b], { transA: tA ? 1 : 0, transB: tB ? 1 : 0 }), 'y', 'float32', ['m', 'n']);
  return g.toBytes();
}

/**
 * MLAS through onnxruntime-node, or an Error saying why not (package missing, binding that does
 * not load on this platform, a session that fails to run a 2×2 check).
 */
export function loadNativeGemm(threads: number): NativeGemm | Error {
  try {
    const require = createRequire(import.meta.url);
    const { binding, initOrt } = require('onnxruntime-node/dist/binding') as BindingModule;
    const { Tensor } = require('onnxruntime-node') as { Tensor: OrtTensorCtor };
    const version = (require('onnxruntime-node/package.json') as { version: string }).version;
    initOrt();
    const n = Math.max(1, Math.min(8, Math.floor(threads)));
    const options = {
      intraOpNumThreads: n,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
    };
    const sessions = new Map<number, BindingSession>();
    const session = (tA: boolean, tB: boolean): BindingSession => {
      const key = (tA ? 2 : 0) + (tB ? 1 : 0);
      let s = sessions.get(key);
      if (s == null) {
        const bytes = gemmModel(tA, tB);
        s = new binding.InferenceSession();
        s.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, options);
        sessions.set(key, s);
      }
      return s;
    };
    const runOptions = {};
    const native: NativeGemm = {
      threads: n,
      description: `onnxruntime-node ${version} MLAS, ${n} thread${n === 1 ? '' : 's'}`,
      gemm(A, B, Y, M, K, N, tA, tB) {
        // The binding refuses views of a SharedArrayBuffer (the threaded wasm build's heap): copy.
        const shared = Y.buffer instanceof SharedArrayBuffer;
        const feeds = {
          a: new Tensor('float32', shared ? A.slice() : A, tA ? [K, M] : [M, K]),
          b: new Tensor('float32', shared ? B.slice() : B, tB ? [N, K] : [K, N]),
        };
        const y = shared ? new Float32Array(M * N) : Y;
        session(tA, tB).run(feeds, { y: new Tensor('float32', y, [M, N]) }, runOptions);
        if (shared) Y.set(y);
      },
      dispose() {
        for (const s of sessions.values()) s.dispose();
        sessions.clear();
      },
    };
    // A 2×3 · (2×3)ᵀ check: the result must land in the pre-allocated output.
    const Y = new Float32Array(4);
    native.gemm(Float32Array.from([1, 2, 3, 4, 5, 6]), Float32Array.from([1, 0, 0, 0, 1, 1]), Y, 2, 3, 2, false, true);
    if (Y.join() !== '1,5,4,11') throw new Error(`self-check gave [${Y.join()}]`);
    return native;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

export type NativeGemmSetting = boolean | 'auto';

export function resolveNativeGemm(option: NativeGemmSetting | undefined): { enabled: boolean; threads: number } {
  const env = process.env.FROST_NATIVE_GEMM?.trim().toLowerCase();
  const fromEnv: NativeGemmSetting | undefined =
    env == null || env === '' || env === 'auto' ? undefined : env === '0' || env === 'false' || env === 'off' ? false : true;
  const wanted = option ?? fromEnv ?? 'auto';
  const threadsEnv = Number(process.env.FROST_NATIVE_GEMM_THREADS);
  const threads = Number.isFinite(threadsEnv) && threadsEnv >= 1 ? threadsEnv : availableParallelism();
  return { enabled: wanted !== false, threads };
}

let current: NativeGemm | null = null;

/** The GEMM runner the wasm BatchMatMul kernel uses for large products (null: XNNPACK only). */
export function nativeGemm(): NativeGemm | null {
  return current;
}

/** Sets (or, with null, removes) the native GEMM runner; returns the previous one (not disposed). */
export function setNativeGemm(gemm: NativeGemm | null): NativeGemm | null {
  const previous = current;
  current = gemm;
  return previous;
}
