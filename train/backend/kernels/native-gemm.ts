/**
 * Native GEMM runners for the wasm backend: large float32 products leave XNNPACK (wasm SIMD128,
 * no FMA, 13-26 GFLOP/s a thread here) for native code that works in place on the wasm heap.
 *
 * A runner comes from a provider (gemm-providers.ts lists them in order of preference):
 *  - 'blas': the system's optimised BLAS (OpenBLAS, MKL or Accelerate) through an FFI call
 *    (gemm-blas.ts). The same library PyTorch calls on this machine.
 *  - 'mlas': onnxruntime-node's MLAS through onnxruntime's C API, in place (gemm-mlas.ts). Always there: ORT
 *    is a frost dependency.
 * Only frost's wasm BatchMatMul consults it; the native 'tensorflow' backend has GEMMs of its own.
 *
 * Which runs a product: by default ('auto', or 'probe') each product goes to the runner that was fastest for its
 * shape class (size bucket × transposes) in a short measured probe of every provider that loads and XNNPACK
 * (gemm-probe.ts), cached per machine, so the choice follows the CPU and the libraries' kernels, not which library
 * happens to be installed. 'first' is the older rule: the first provider of gemm-providers.ts that loads.
 *
 * Settings: FROST_NATIVE_GEMM = auto | probe (default: per shape class, measured) | first | blas | mlas | 0
 * (XNNPACK only), or initBackend({ nativeGemm }); threads with FROST_NATIVE_GEMM_THREADS (default:
 * os.availableParallelism(), capped at 8).
 */
import { availableParallelism } from 'node:os';

export type GemmProviderName = 'blas' | 'mlas';
/** What can run a product: a native provider, or XNNPACK (frost's wasm BatchMatMul without a native runner). */
export type GemmRunnerName = GemmProviderName | 'xnnpack';

export interface NativeGemm {
  /** The provider, or 'probe' for the per-shape-class dispatcher over several (gemm-probe.ts). */
  readonly provider: GemmProviderName | 'probe';
  readonly threads: number;
  /** One line for logs: what runs the GEMMs. */
  readonly description: string;
  /** The kernels the library runs on this CPU, where it says (OpenBLAS: openblas_get_corename). */
  readonly kernel?: string;
  /**
   * Whether this runner takes a product of this shape (a dispatcher leaves the classes XNNPACK won to XNNPACK);
   * `batched`: one entry of a batched product (minEntryMacs applies, not minMacs). Absent: every product above the
   * thresholds.
   */
  accepts?(M: number, K: number, N: number, tA: boolean, tB: boolean, batched: boolean): boolean;
  /** A dispatcher's choice per shape class and the probe's timings (gemm-probe.ts' GemmChoiceRecord), for records. */
  readonly choice?: object;
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
  /**
   * Batched products in one native call, where the runner has one: the entries' operands and outputs contiguous
   * ([batch, M, K] or [batch, K, M] when tA, and so on). Absent: frost's BatchMatMul calls `gemm` entry by entry.
   */
  readonly batched?: BatchedGemm;
  dispose(): void;
}

/** `batch` independent products Y[i] = op(A[i]) · op(B[i]) in one call (multi-head attention's, for one). */
export interface BatchedGemm {
  /** Fewer multiply-adds than this over all entries stay where they were (the stock loop, or one call per entry). */
  readonly minMacs: number;
  gemm(
    A: Float32Array,
    B: Float32Array,
    Y: Float32Array,
    batch: number,
    M: number,
    K: number,
    N: number,
    tA: boolean,
    tB: boolean,
  ): void;
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

export type NativeGemmSetting = boolean | 'auto' | 'probe' | 'first' | GemmProviderName;

export interface ResolvedNativeGemm {
  /**
   * false: XNNPACK only; 'auto': per shape class, the runner a measured probe found fastest (gemm-probe.ts);
   * 'first': the first provider that loads; or one provider by name.
   */
  which: false | 'auto' | 'first' | GemmProviderName;
  /** true when asked for explicitly (a failure to load is then worth a warning even when quiet). */
  explicit: boolean;
  threads: number;
}

function parseSetting(raw: string | undefined): NativeGemmSetting | undefined {
  const v = raw?.trim().toLowerCase();
  if (v == null || v === '' || v === 'auto' || v === 'probe') return undefined;
  if (v === '0' || v === 'false' || v === 'off') return false;
  if (v === 'blas' || v === 'mlas' || v === 'first') return v;
  if (v === '1' || v === 'true' || v === 'on') return true;
  throw new Error(`FROST_NATIVE_GEMM must be auto, probe, first, blas, mlas or 0, got '${raw}'`);
}

export function resolveNativeGemm(option: NativeGemmSetting | undefined): ResolvedNativeGemm {
  const wanted = option ?? parseSetting(process.env.FROST_NATIVE_GEMM) ?? 'auto';
  const threadsEnv = Number(process.env.FROST_NATIVE_GEMM_THREADS);
  const threads = gemmThreads(Number.isFinite(threadsEnv) && threadsEnv >= 1 ? threadsEnv : availableParallelism());
  const which = wanted === true || wanted === 'probe' ? 'auto' : wanted;
  return { which, explicit: wanted !== 'auto' && wanted !== 'probe', threads };
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

/**
 * What runs a training run's GEMMs, for its folder (gemm.json, written by the trainer): the tfjs backend, the
 * runner's description and, with the per-shape probe, each shape class's choice and the probe's timings.
 */
export function gemmRunRecord(backend: string): Record<string, unknown> {
  if (backend !== 'wasm') return { backend, gemm: backend === 'tensorflow' ? "libtensorflow's own" : 'tfjs kernels' };
  const native = current;
  return {
    backend,
    gemm: native?.description ?? 'XNNPACK (wasm)',
    ...(native != null ? { threads: native.threads } : {}),
    ...(native?.kernel != null ? { kernel: native.kernel } : {}),
    ...(native?.choice != null ? { probe: native.choice } : {}),
  };
}
