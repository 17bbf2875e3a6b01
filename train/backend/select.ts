/**
 * Picks the tfjs backend frost trains on.
 *
 * Order (prefer: 'auto'): @tensorflow/tfjs-node-gpu, @tensorflow/tfjs-node (both register the
 * native 'tensorflow' backend; neither is a dependency of frost, users install one themselves),
 * then @tensorflow/tfjs-backend-wasm with frost's kernels (wasm-kernels.ts). The plain-JS 'cpu'
 * backend is 50-100× slower than wasm on the MatMuls of a training step, so it is used only when
 * asked for by name (tests of tiny things).
 *
 * wasm threads: the threaded SIMD build runs in Node through wasm-threaded.ts. Default: threaded
 * when the machine has at least 2 logical CPUs, with one XNNPACK thread per logical CPU (max 8);
 * set FROST_WASM_THREADS=1 (or the wasmThreads option) for the single-threaded SIMD build.
 * See the numbers in wasm-kernels.ts.
 */
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';

export type BackendPreference = 'auto' | 'tensorflow' | 'wasm' | 'cpu';

export interface InitBackendOptions {
  prefer?: BackendPreference;
  quiet?: boolean;
  /** XNNPACK threads for wasm; 1 selects the single-threaded SIMD build. Default: FROST_WASM_THREADS or auto. */
  wasmThreads?: number | 'auto';
}

export interface BackendInfo {
  /** tfjs backend name: 'tensorflow', 'wasm' or 'cpu'. */
  name: string;
  /** npm package that provides it. */
  package: string;
  /** wasm only: XNNPACK threads actually running. */
  threads?: number;
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

export function resolveWasmThreads(option: number | 'auto' | undefined): number {
  const fromEnv = process.env.FROST_WASM_THREADS;
  const wanted = option ?? (fromEnv != null && fromEnv !== '' ? (fromEnv === 'auto' ? 'auto' : Number(fromEnv)) : 'auto');
  if (wanted === 'auto') return Math.min(8, availableParallelism());
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
  return { name: 'wasm', package: pkg, threads: wasm.getThreadsCount() };
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
  const warning = info.name === 'cpu' ? ' (plain JS: fine for tiny tests, far too slow for training)' : '';
  return `tfjs backend: ${info.name} (${info.package}${threads})${warning}`;
}

let current: { key: string; info: BackendInfo } | null = null;

/**
 * Makes the best available backend (or the one asked for) current, registers frost's kernels for
 * it, prints one line saying which (unless quiet) and returns what was chosen.
 */
export async function initBackend(opts: InitBackendOptions = {}): Promise<BackendInfo> {
  const prefer = opts.prefer ?? 'auto';
  const key = `${prefer}/${opts.wasmThreads ?? ''}`;
  if (current?.key === key && tf.getBackend() === current.info.name) return current.info;

  const candidates = BACKEND_CANDIDATES.filter((c) => (prefer === 'auto' ? !c.explicitOnly : c.name === prefer));
  const failures: string[] = [];
  for (const candidate of candidates) {
    try {
      const info = await candidate.load(opts);
      current = { key, info };
      if (!opts.quiet) console.log(describe(info));
      return info;
    } catch (e) {
      failures.push(`  ${candidate.package}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
    }
  }
  const hint =
    prefer === 'tensorflow' ? '\ninstall @tensorflow/tfjs-node (or -gpu) for the native backend, or use --backend wasm' : '';
  throw new Error(`no usable tfjs backend for prefer='${prefer}':\n${failures.join('\n')}${hint}`);
}
