/**
 * Native GEMM runners for the wasm backend: large float32 products leave XNNPACK (wasm SIMD128,
 * no FMA, 13-26 GFLOP/s a thread here) for native code that works in place on the wasm heap.
 *
 * A runner comes from a provider (gemm-providers.ts lists them in order of preference):
 *  - 'blas': the system's optimised BLAS (OpenBLAS, MKL or Accelerate) through an FFI call
 *    (gemm-blas.ts). The same library PyTorch calls on this machine.
 *  - 'mlas': onnxruntime-node's MLAS through its N-API binding (gemm-mlas.ts). Always there: ORT
 *    is a frost dependency.
 * Only frost's wasm BatchMatMul consults it; the native 'tensorflow' backend has GEMMs of its own.
 *
 * Settings: FROST_NATIVE_GEMM = auto (default: the first provider that loads) | blas | mlas | 0
 * (XNNPACK only), or initBackend({ nativeGemm }); threads with FROST_NATIVE_GEMM_THREADS (default:
 * os.availableParallelism(), capped at 8).
 */
import { availableParallelism } from 'node:os';

export type GemmProviderName = 'blas' | 'mlas';

export interface NativeGemm {
  readonly provider: GemmProviderName;
  readonly threads: number;
  /** One line for logs: what runs the GEMMs. */
  readonly description: string;
  /** Smaller products (multiply-adds) stay in XNNPACK: this runner's fixed cost per call outweighs its speed. */
  readonly minMacs: number;
  /**
   * Batched products (one call per batch entry) come here only with at least this many multiply-adds an entry:
   * below it the call's fixed cost outweighs what it saves over the stock loop (≈ 1 ns a multiply-add).
   */
  readonly minEntryMacs: number;
  /**
   * Y [M, N] = op(A) · op(B), op = transpose when the flag is set. A is [M, K] ([K, M] when tA),
   * B is [K, N] ([N, K] when tB); all three are row-major float32 views (of the wasm heap).
   */
  gemm(
    A: Float32Array,
    B: Float32Array,
    Y: Float32Array,
    M: number,
    K: number,
    N: number,
    tA: boolean,
    tB: boolean,
  ): void;
  dispose(): void;
}

export interface GemmProvider {
  readonly name: GemmProviderName;
  /** The runner, or an Error saying why not (library missing, failed self-check, …). */
  load(threads: number): NativeGemm | Error;
}

/** A 2×3 · (2×3)ᵀ product that must land in the pre-allocated output; throws otherwise. */
export function selfCheck(gemm: NativeGemm['gemm']): void {
  const Y = new Float32Array(4);
  gemm(Float32Array.from([1, 2, 3, 4, 5, 6]), Float32Array.from([1, 0, 0, 0, 1, 1]), Y, 2, 3, 2, false, true);
  if (Y.join() !== '1,5,4,11') throw new Error(`self-check gave [${Y.join()}]`);
}

/** A thread count a provider can use: a whole number in [1, 8]. */
export function gemmThreads(requested: number): number {
  return Math.max(1, Math.min(8, Math.floor(requested)));
}

export type NativeGemmSetting = boolean | 'auto' | GemmProviderName;

export interface ResolvedNativeGemm {
  /** false: XNNPACK only; 'auto': the first provider that loads; or one provider by name. */
  which: false | 'auto' | GemmProviderName;
  /** true when asked for explicitly (a failure to load is then worth a warning even when quiet). */
  explicit: boolean;
  threads: number;
}

function parseSetting(raw: string | undefined): NativeGemmSetting | undefined {
  const v = raw?.trim().toLowerCase();
  if (v == null || v === '' || v === 'auto') return undefined;
  if (v === '0' || v === 'false' || v === 'off') return false;
  if (v === 'blas' || v === 'mlas') return v;
  if (v === '1' || v === 'true' || v === 'on') return true;
  throw new Error(`FROST_NATIVE_GEMM must be auto, blas, mlas or 0, got '${raw}'`);
}

export function resolveNativeGemm(option: NativeGemmSetting | undefined): ResolvedNativeGemm {
  const wanted = option ?? parseSetting(process.env.FROST_NATIVE_GEMM) ?? 'auto';
  const threadsEnv = Number(process.env.FROST_NATIVE_GEMM_THREADS);
  const threads = gemmThreads(Number.isFinite(threadsEnv) && threadsEnv >= 1 ? threadsEnv : availableParallelism());
  const which = wanted === true ? 'auto' : wanted;
  return { which, explicit: wanted !== 'auto', threads };
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
