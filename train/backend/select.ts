/**
 * Picks the tfjs backend frost trains on.
 *
 * Order (prefer: 'auto'): @tensorflow/tfjs-node-gpu, @tensorflow/tfjs-node (both register the
 * native 'tensorflow' backend; neither is a dependency of frost, users install one themselves),
 * then @tensorflow/tfjs-backend-wasm with frost's kernels (wasm-kernels.ts). The plain-JS 'cpu'
 * backend is 40-60× slower than wasm on a 512³ MatMul (0.65-0.9 s vs 10-18 ms here), so it is used
 * only when asked for by name (tests of tiny things). A native package that is installed but fails
 * to load is reported (one line on stderr) before falling back.
 *
 * Large GEMMs on wasm: native code, the system's optimised BLAS when there is one, else
 * onnxruntime-node's MLAS (kernels/native-gemm.ts; FROST_NATIVE_GEMM=blas|mlas picks one, =0 or
 * nativeGemm: false keeps them in XNNPACK). It is consulted only by frost's wasm BatchMatMul
 * kernel: the native 'tensorflow' backend has fast GEMMs of its own.
 *
 * wasm threads: stock tfjs loads the single-threaded SIMD build in Node. The threaded SIMD build
 * runs too, through wasm-threaded.ts, with FROST_WASM_THREADS=N (or the wasmThreads option), N ≤ 8.
 * Default ('auto'): 1 thread. On the shared 2-vCPU dev VM a second thread halved a big GEMM only
 * while the other vCPU was idle and made training steps slower whenever it was not (numbers in
 * wasm-kernels.ts); it also costs 1.3 s of start-up. Try FROST_WASM_THREADS=2 on a dedicated box.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { loadNativeGemm } from './kernels/gemm-providers.ts';
import { nativeGemm, resolveNativeGemm, setNativeGemm, type NativeGemmSetting } from './kernels/native-gemm.ts';

export type BackendPreference = 'auto' | 'tensorflow' | 'wasm' | 'cpu';

export interface InitBackendOptions {
  prefer?: BackendPreference;
  quiet?: boolean;
  /** XNNPACK threads for wasm; 1 selects the single-threaded SIMD build. Default: FROST_WASM_THREADS or auto. */
  wasmThreads?: number | 'auto';
  /**
   * wasm only: run large GEMMs natively (kernels/native-gemm.ts): 'blas', 'mlas', 'auto' (the first
   * that loads) or false. Default: FROST_NATIVE_GEMM, else 'auto'.
   */
  nativeGemm?: NativeGemmSetting;
}

export interface BackendInfo {
  /** tfjs backend name: 'tensorflow', 'wasm' or 'cpu'. */
  name: string;
  /** npm package that provides it. */
  package: string;
  /** wasm only: XNNPACK threads actually running. */
  threads?: number;
  /** wasm only: what runs the large GEMMs ('XNNPACK (wasm)' or the native runner's description). */
  gemm?: string;
}

interface Candidate {
  name: 'tensorflow' | 'wasm' | 'cpu';
  package: string;
  /** Only when prefer names it (never in 'auto'). */
  explicitOnly?: boolean;
  /** Makes the backend current; throws with the reason when it can't. */
  load: (opts: InitBackendOptions) => Promise<BackendInfo>;
}

/** import() of a package frost does not depend on (the string keeps tsc from resolving it). */
async function importOptional(pkg: string): Promise<unknown> {
  return import(pkg);
}

async function activate(name: string): Promise<void> {
  if (tf.findBackendFactory(name) == null) throw new Error(`no '${name}' backend registered`);
  if (!(await tf.setBackend(name))) throw new Error(`backend '${name}' failed to initialise`);
  await tf.ready();
}

const loadNative = (pkg: string) => async (): Promise<BackendInfo> => {
  await importOptional(pkg); // registers 'tensorflow'
  await activate('tensorflow');
  return { name: 'tensorflow', package: pkg };
};

/** What 'auto' means (see the header). */
const AUTO_WASM_THREADS = 1;

function resolveWasmThreads(option: number | 'auto' | undefined): number {
  const fromEnv = process.env.FROST_WASM_THREADS;
  const wanted =
    option ?? (fromEnv != null && fromEnv !== '' ? (fromEnv === 'auto' ? 'auto' : Number(fromEnv)) : 'auto');
  if (wanted === 'auto') return AUTO_WASM_THREADS;
  if (!Number.isFinite(wanted) || wanted < 1) throw new Error(`bad wasm thread count: ${String(wanted)}`);
  return Math.min(8, Math.floor(wanted));
}

async function loadWasm(opts: InitBackendOptions): Promise<BackendInfo> {
  const pkg = '@tensorflow/tfjs-backend-wasm';
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  const { registerWasmKernels } = await import('./wasm-kernels.ts');
  const threads = resolveWasmThreads(opts.wasmThreads);
  // Swap the loader only while no wasm backend instance exists (engine.registry holds live ones).
  if (tf.engine().registry.wasm == null) {
    if (threads > 1) {
      const { registerThreadedWasmBackend } = await import('./wasm-threaded.ts');
      registerThreadedWasmBackend(threads);
    } else {
      // The Node bundle finds the .wasm next to itself; an explicit folder also survives bundling.
      const require = createRequire(import.meta.url);
      wasm.setWasmPaths(`${dirname(require.resolve(pkg))}/`);
    }
  }
  registerWasmKernels();
  await activate('wasm');
  const gemm = configureNativeGemm(opts.nativeGemm, opts.quiet === true);
  return { name: 'wasm', package: pkg, threads: wasm.getThreadsCount(), gemm };
}

/** Turns the native GEMM runner on or off as asked; returns what will run large GEMMs. */
function configureNativeGemm(option: NativeGemmSetting | undefined, quiet: boolean): string {
  const { which, explicit, threads } = resolveNativeGemm(option);
  const current = nativeGemm();
  if (which === false) {
    setNativeGemm(null)?.dispose();
    return 'XNNPACK (wasm)';
  }
  if (current != null && current.threads === threads && (which === 'auto' || current.provider === which))
    return current.description;
  const loaded = loadNativeGemm(threads, which);
  setNativeGemm(loaded instanceof Error ? null : loaded)?.dispose();
  if (loaded instanceof Error) {
    if (!quiet || explicit)
      console.warn(`frost: native GEMM unavailable (${loaded.message.split('\n')[0]}); XNNPACK runs all GEMMs`);
    return 'XNNPACK (wasm)';
  }
  return loaded.description;
}

async function loadCpu(): Promise<BackendInfo> {
  const pkg = '@tensorflow/tfjs-backend-cpu';
  if (tf.findBackendFactory('cpu') == null) await importOptional(pkg);
  await activate('cpu');
  return { name: 'cpu', package: pkg };
}

/** Tried in this order; the first that loads wins. */
export const BACKEND_CANDIDATES: readonly Candidate[] = [
  { name: 'tensorflow', package: '@tensorflow/tfjs-node-gpu', load: loadNative('@tensorflow/tfjs-node-gpu') },
  { name: 'tensorflow', package: '@tensorflow/tfjs-node', load: loadNative('@tensorflow/tfjs-node') },
  { name: 'wasm', package: '@tensorflow/tfjs-backend-wasm', load: loadWasm },
  { name: 'cpu', package: '@tensorflow/tfjs-backend-cpu', load: loadCpu, explicitOnly: true },
];

function describe(info: BackendInfo): string {
  const threads = info.threads != null ? `, ${info.threads} thread${info.threads === 1 ? '' : 's'}` : '';
  const gemm = info.gemm != null ? `; large GEMMs: ${info.gemm}` : '';
  const warning = info.name === 'cpu' ? ' (plain JS: fine for tiny tests, far too slow for training)' : '';
  return `tfjs backend: ${info.name} (${info.package}${threads}${gemm})${warning}`;
}

const NOT_INSTALLED = 'not installed';

function firstLine(e: unknown): string {
  return e instanceof Error ? e.message.split('\n')[0] : String(e);
}

/** The package itself is missing (as opposed to installed but broken, e.g. no libtensorflow). */
function isNotInstalled(e: unknown, pkg: string): boolean {
  const code = (e as { code?: string } | null)?.code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && firstLine(e).includes(`'${pkg}'`);
}

let current: { key: string; info: BackendInfo } | null = null;

/**
 * Makes the best available backend (or the one asked for) current, registers frost's kernels for
 * it, prints one line saying which (unless quiet) and returns what was chosen.
 */
export async function initBackend(opts: InitBackendOptions = {}): Promise<BackendInfo> {
  const prefer = opts.prefer ?? 'auto';
  const key = `${prefer}/${opts.wasmThreads ?? ''}/${opts.nativeGemm ?? ''}`;
  if (current?.key === key && tf.getBackend() === current.info.name) return current.info;

  const candidates = BACKEND_CANDIDATES.filter((c) => (prefer === 'auto' ? !c.explicitOnly : c.name === prefer));
  const failures: string[] = [];
  for (const candidate of candidates) {
    try {
      const info = await candidate.load(opts);
      current = { key, info };
      if (!opts.quiet) {
        for (const f of failures.filter((line) => !line.endsWith(NOT_INSTALLED)))
          console.warn(`tfjs backend skipped:${f}`);
        console.log(describe(info));
      }
      return info;
    } catch (e) {
      failures.push(`  ${candidate.package}: ${isNotInstalled(e, candidate.package) ? NOT_INSTALLED : firstLine(e)}`);
    }
  }
  const hint =
    prefer === 'tensorflow'
      ? '\ninstall @tensorflow/tfjs-node (or -gpu) for the native backend, or use --backend wasm'
      : '';
  throw new Error(`no usable tfjs backend for prefer='${prefer}':\n${failures.join('\n')}${hint}`);
}
