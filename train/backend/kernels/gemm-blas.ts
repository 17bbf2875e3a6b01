/**
 * GEMMs by the system's optimised BLAS (cblas_sgemm of OpenBLAS, MKL or Apple's Accelerate),
 * called through koffi's FFI in place on the wasm heap: no copies (koffi hands native code the
 * typed arrays' own memory), 0.02 ms a call with tfjs's own overhead included (npm run bench:gemm's [8×8]·[8×8]).
 *
 * Why: it is the library PyTorch calls on the same machine (the training-speed peer loads
 * OpenBLAS-OpenMP), and on this model's shapes it was 1.0-2.0× faster than MLAS with the same
 * threads (npm run bench:gemm prints them side by side; 1.8× on the decoder's recurrent
 * [64, 512] × [512, 1536] product).
 *
 * Which library: FROST_BLAS (a path or file name) when set, else the first of LIBRARIES that
 * loads. Only optimised BLAS builds are looked for by name; the reference BLAS a bare Debian's
 * libblas.so.3 may point to is never picked unless FROST_BLAS names it: issue #8 measured PyTorch 20×
 * slower on it.
 * Threads: set through the library's own call (openblas_set_num_threads, MKL_Set_Num_Threads);
 * Accelerate sizes its pool itself. OpenBLAS's OpenMP threads sleep after each GEMM
 * (OMP_WAIT_POLICY=PASSIVE, set before the library loads unless the environment names a policy): frost
 * runs OpenBLAS's pool beside ORT's (MLAS) and the wasm thread on the same cores, and a pool that spins
 * after its call holds a core the next product needs. `OMP_WAIT_POLICY=ACTIVE npm run bench:gemm`, where each MLAS
 * product follows an OpenBLAS one, gave MLAS 10.74 ms for a Transformer's [4096×256]·[256×1024] and 115.5 ms for its
 * logits, against 5.15 and 45.6 ms with the threads asleep (docs/training-backend.md).
 *
 * Missing koffi (an optional native addon with prebuilt binaries in its npm package) or no BLAS:
 * the provider reports why and MLAS runs the GEMMs.
 */
import { loadKoffi, type Koffi, type KoffiFunction, type KoffiLib } from './koffi.ts';
import { gemmThreads, selfCheck, type GemmProvider, type NativeGemm } from './native-gemm.ts';

/**
 * Smaller products stay in XNNPACK. npm run bench:gemm found OpenBLAS no slower even at [8×8]·[8×8]
 * (0.02 vs 0.04 ms a call, engine included), so this bound is not about speed: products this small
 * are rare in training (none in rnn-attn/small) and keep the path they had.
 */
const BLAS_MIN_MACS = 2 ** 15;

/** Tried in order when FROST_BLAS is not set. */
const LIBRARIES: Readonly<Record<string, readonly string[]>> = {
  linux: ['libopenblas.so.0', 'libopenblas.so', 'libmkl_rt.so.2', 'libmkl_rt.so'],
  darwin: [
    '/opt/homebrew/opt/openblas/lib/libopenblas.dylib',
    '/usr/local/opt/openblas/lib/libopenblas.dylib',
    '/System/Library/Frameworks/Accelerate.framework/Accelerate',
  ],
  win32: ['libopenblas.dll', 'openblas.dll', 'mkl_rt.2.dll'],
};

const ROW_MAJOR = 101;
const NO_TRANS = 111;
const TRANS = 112;

type Sgemm = (
  order: number,
  transA: number,
  transB: number,
  M: number,
  N: number,
  K: number,
  alpha: number,
  A: Float32Array,
  lda: number,
  B: Float32Array,
  ldb: number,
  beta: number,
  C: Float32Array,
  ldc: number,
) => void;

/** A function of the library, or null when it does not export that symbol. */
function optional(lib: KoffiLib, definition: string): KoffiFunction | null {
  try {
    return lib.func(definition);
  } catch {
    return null;
  }
}

interface OpenedBlas {
  path: string;
  sgemm: Sgemm;
  /** e.g. "OpenBLAS 0.3.21 … USE_OPENMP Cooperlake", "MKL", "Accelerate". */
  flavour: string;
  /**
   * The kernels OpenBLAS runs on this CPU (openblas_get_corename: "Haswell", "SkylakeX", "Cooperlake", …), which
   * OPENBLAS_CORETYPE overrides; null for other libraries.
   */
  corename: string | null;
  setThreads: ((n: number) => void) | null;
}

function open(koffi: Koffi, path: string): OpenedBlas {
  const lib = koffi.load(path);
  const sgemm = optional(
    lib,
    'void cblas_sgemm(int order, int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, ' +
      'const float *B, int ldb, float beta, float *C, int ldc)',
  ) as Sgemm | null;
  if (sgemm == null) {
    lib.unload?.();
    throw new Error(`${path} has no cblas_sgemm`);
  }
  const openblasConfig = optional(lib, 'const char *openblas_get_config()');
  const openblasCorename = optional(lib, 'const char *openblas_get_corename()');
  const openblasThreads = optional(lib, 'void openblas_set_num_threads(int n)');
  const mklThreads = optional(lib, 'int MKL_Set_Num_Threads(int n)');
  const flavour =
    openblasConfig != null
      ? String(openblasConfig())
      : mklThreads != null
        ? 'MKL'
        : path.includes('Accelerate')
          ? 'Accelerate'
          : path;
  const setter = openblasThreads ?? mklThreads;
  const corename = openblasCorename == null ? null : String(openblasCorename()).trim() || null;
  return { path, sgemm, flavour, corename, setThreads: setter == null ? null : (n) => void setter(n) };
}

function loadBlasGemm(threads: number): NativeGemm | Error {
  const koffi = loadKoffi();
  if (koffi instanceof Error) return koffi;
  // libgomp reads its wait policy when OpenBLAS first loads it; the header says why frost's threads sleep.
  process.env.OMP_WAIT_POLICY ??= 'PASSIVE';
  const explicit = process.env.FROST_BLAS?.trim();
  const candidates = explicit ? [explicit] : (LIBRARIES[process.platform] ?? []);
  const tried: string[] = [];
  for (const path of candidates) {
    let blas: OpenedBlas;
    try {
      blas = open(koffi, path);
    } catch (e) {
      tried.push(`${path}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
      continue;
    }
    const n = gemmThreads(threads);
    blas.setThreads?.(n);
    const { sgemm } = blas;
    const native: NativeGemm = {
      provider: 'blas',
      threads: n,
      minMacs: BLAS_MIN_MACS,
      // ≈ 2-4 µs a call (koffi and OpenBLAS's set-up): 780 attention entries of 21×21×64 took 5 ms against 60.
      minEntryMacs: 4096,
      description: `BLAS ${blas.flavour.split(' ').slice(0, 2).join(' ')}${blas.corename ? ` ${blas.corename}` : ''} (${blas.path}), ${n} thread${n === 1 ? '' : 's'}`,
      ...(blas.corename ? { kernel: `OpenBLAS core ${blas.corename}` } : {}),
      gemm(A, B, Y, M, K, N, tA, tB) {
        sgemm(
          ROW_MAJOR,
          tA ? TRANS : NO_TRANS,
          tB ? TRANS : NO_TRANS,
          M,
          N,
          K,
          1,
          A,
          tA ? M : K,
          B,
          tB ? K : N,
          0,
          Y,
          N,
        );
      },
      dispose() {
        // The library stays mapped: unloading OpenBLAS while its OpenMP threads live can crash at exit.
      },
    };
    try {
      selfCheck(native.gemm);
    } catch (e) {
      tried.push(`${path}: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    return native;
  }
  return new Error(
    candidates.length === 0
      ? `no BLAS library names known for platform ${process.platform}; set FROST_BLAS`
      : `no optimised BLAS found (${tried.join('; ')})${explicit ? '' : '; install OpenBLAS (Debian: libopenblas0-openmp) or set FROST_BLAS'}`,
  );
}

export const blasProvider: GemmProvider = { name: 'blas', load: loadBlasGemm };
