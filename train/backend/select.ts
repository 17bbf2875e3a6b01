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
 * Large GEMMs on wasm: native code, per shape class the fastest of the system's optimised BLAS, onnxruntime-node's
 * MLAS and XNNPACK in a short probe cached per machine (kernels/gemm-probe.ts; FROST_NATIVE_GEMM=blas|mlas picks
 * one, =first the first that loads, =0 or nativeGemm: false keeps them in XNNPACK). It is consulted only by frost's
 * wasm BatchMatMul kernel: the native 'tensorflow' backend has fast GEMMs of its own.
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
import { loadAllNativeGemms, loadNativeGemm } from './kernels/gemm-providers.ts';
import type { ProbeShape, TimeProduct } from './kernels/gemm-classes.ts';
import { makeDispatcher } from './kernels/gemm-dispatch.ts';
import { chooseRunners, type GemmChoiceRecord } from './kernels/gemm-probe.ts';
import {
  nativeGemm,
  resolveNativeGemm,
  setNativeGemm,
  type NativeGemm,
  type NativeGemmSetting,
} from './kernels/native-gemm.ts';

export type BackendPreference = 'auto' | 'tensorflow' | 'wasm' | 'cpu';

export interface InitBackendOptions {
  prefer?: BackendPreference;
  quiet?: boolean;
  /** XNNPACK threads for wasm; 1 selects the single-threaded SIMD build. Default: FROST_WASM_THREADS or auto. */
  wasmThreads?: number | 'auto';
  /**
   * wasm only: run large GEMMs natively (kernels/native-gemm.ts): 'auto' (per shape class, the fastest in a probe:
   * kernels/gemm-probe.ts), 'first' (the first provider that loads), 'blas', 'mlas' or false. Default:
   * FROST_NATIVE_GEMM, else 'auto'.
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
  /** wasm with the per-shape probe: which runner each shape class goes to, and the probe's timings. */
  gemmChoice?: GemmChoiceRecord;
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
  const native = nativeGemm();
  return {
    name: 'wasm',
    package: pkg,
    threads: wasm.getThreadsCount(),
    gemm,
    // A dispatcher carries the probe's record it was made from (gemm-dispatch.ts).
    ...(native?.provider === 'probe' && native.choice != null ? { gemmChoice: native.choice as GemmChoiceRecord } : {}),
  };
}

/**
 * Times one call of a probe's product through frost's wasm BatchMatMul (tf.matMul), with the candidate as the
 * only runner (null: XNNPACK): what a training step pays, the kernel's own work included. Operands are made once
 * per class; `dispose` frees them and puts back the runner that was current.
 */
function matMulTimer(): { time: TimeProduct; dispose: () => void } {
  const operands = new Map<string, [tf.Tensor, tf.Tensor]>();
  const previous = nativeGemm();
  const forced = new Map<NativeGemm, NativeGemm>();
  const time: TimeProduct = (candidate, s: ProbeShape) => {
    let ab = operands.get(s.class);
    if (ab == null) {
      ab = [
        tf.randomUniform(s.tA ? [s.K, s.M] : [s.M, s.K], -1, 1, 'float32', 1),
        tf.randomUniform(s.tB ? [s.N, s.K] : [s.K, s.N], -1, 1, 'float32', 2),
      ];
      operands.set(s.class, ab);
    }
    const r = candidate.runner;
    let runner: NativeGemm | null = null;
    if (r != null) {
      runner = forced.get(r) ?? { ...r, minMacs: 0, minEntryMacs: 0, accepts: undefined };
      forced.set(r, runner);
    }
    setNativeGemm(runner);
    const t0 = performance.now();
    const y = tf.matMul(ab[0], ab[1], s.tA, s.tB);
    const ms = performance.now() - t0;
    y.dispose();
    return ms;
  };
  const dispose = () => {
    setNativeGemm(previous);
    for (const [a, b] of operands.values()) tf.dispose([a, b]);
  };
  return { time, dispose };
}

/**
 * Every provider that loads, behind a dispatcher that sends each shape class to the runner the probe (or its
 * cache) found fastest; an Error when none loads.
 */
function loadProbedGemm(threads: number): NativeGemm | Error {
  const runners = loadAllNativeGemms(threads);
  if (runners instanceof Error) return runners;
  const timer = matMulTimer();
  let record: GemmChoiceRecord;
  try {
    record = chooseRunners(threads, runners, timer.time);
  } finally {
    timer.dispose();
  }
  return makeDispatcher(runners, record);
}

/** Turns the native GEMM runner on or off as asked; returns what will run large GEMMs. */
function configureNativeGemm(option: NativeGemmSetting | undefined, quiet: boolean): string {
  const { which, explicit, threads } = resolveNativeGemm(option);
  const current = nativeGemm();
  if (which === false) {
    setNativeGemm(null)?.dispose();
    return 'XNNPACK (wasm)';
  }
  const same =
    which === 'auto'
      ? current?.provider === 'probe'
      : which === 'first'
        ? current != null && current.provider !== 'probe'
        : current?.provider === which;
  if (current != null && current.threads === threads && same) return current.description;
  let loaded: NativeGemm | Error;
  if (which === 'auto') {
    // Off the current runner first: the probe installs each candidate in turn, then puts back what was there.
    setNativeGemm(null)?.dispose();
    loaded = loadProbedGemm(threads);
  } else loaded = loadNativeGemm(threads, which === 'first' ? 'auto' : which);
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
