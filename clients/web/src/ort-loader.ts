/**
 * Loads onnxruntime-web for this browser. Two builds of it exist: the plain wasm one, and a larger
 * one (asyncify wasm) that adds the WebGPU execution provider. The page imports only the one it
 * needs: WebGPU when `navigator.gpu` hands out an adapter, else plain wasm. Both are separate
 * chunks of the bundle, so a wasm-only browser never downloads the WebGPU build.
 *
 * The wasm binary is downloaded by the page (with progress, through Cache Storage) and handed to ORT
 * as `env.wasm.wasmBinary`; the small `.mjs` glue ORT still imports from `env.wasm.wasmPaths`, which
 * points at the server's own copy, so nothing is fetched from a CDN.
 */
import { importOrtWeb, type OrtWebBuild } from '../../../core/runtime/ort-web.ts';
import type { Ort } from '../../../core/runtime/seq2seq.ts';
import type { ProgressListener } from './download.ts';
import { cachedFetch } from './file-cache.ts';

/** Where inference runs: the onnxruntime-web build of that name. */
export type Backend = OrtWebBuild;
/** What the user asked for; `auto` and `webgpu` both mean WebGPU when an adapter exists, else wasm. */
export type BackendChoice = 'auto' | Backend;

/** A configured ORT module and how it will run. */
export interface OrtSetup {
  ort: Ort;
  backend: Backend;
  /** wasm threads: more than one only when the page is cross-origin isolated. */
  threads: number;
  /** Bytes of the wasm binary, and whether they came from the cache. */
  wasmBytes: number;
  wasmFromCache: boolean;
}

/** The minimum of the WebGPU API the page touches (TypeScript's DOM library does not declare it). */
interface GpuNavigator {
  gpu?: { requestAdapter(): Promise<unknown> };
}

/** The wasm binary each build loads; the `.mjs` glue beside it has the same stem. */
const WASM_FILE: Record<Backend, string> = {
  wasm: 'ort-wasm-simd-threaded.wasm',
  webgpu: 'ort-wasm-simd-threaded.asyncify.wasm',
};

const loaded = new Map<Backend, Promise<OrtSetup>>();

let gpuProbe: Promise<boolean> | undefined;

/**
 * Whether WebGPU can actually be used: `navigator.gpu` exists in browsers that then find no
 * adapter. Asked once per page (each failed request logs a browser warning).
 */
export function webGpuAvailable(): Promise<boolean> {
  gpuProbe ??= (async () => {
    const gpu = (navigator as Navigator & GpuNavigator).gpu;
    if (!gpu) return false;
    try {
      return (await gpu.requestAdapter()) != null;
    } catch {
      return false;
    }
  })();
  return gpuProbe;
}

/** wasm threads to ask for: SharedArrayBuffer (hence threads) exists only when cross-origin isolated. */
export function wasmThreads(): number {
  if (!globalThis.crossOriginIsolated) return 1;
  return Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1));
}

/**
 * Imports and configures the ORT build for `choice`; each build is set up once per page, since
 * ORT reads its `env` only when it first initialises.
 * @param ortBase URL of the folder holding ORT's `.mjs` and `.wasm` files (the server's `/ort/`)
 */
export async function loadOrt(choice: BackendChoice, ortBase: URL, onProgress: ProgressListener): Promise<OrtSetup> {
  // Without an adapter the WebGPU build could only run its wasm provider: take the smaller build.
  const backend: Backend = choice !== 'wasm' && (await webGpuAvailable()) ? 'webgpu' : 'wasm';
  let setup = loaded.get(backend);
  if (!setup) {
    setup = configure(backend, ortBase, onProgress);
    loaded.set(backend, setup);
    // A failed load (network, quota) may be retried.
    setup.catch(() => loaded.delete(backend));
  }
  return setup;
}

async function configure(backend: Backend, ortBase: URL, onProgress: ProgressListener): Promise<OrtSetup> {
  const ort = await importOrtWeb(backend);
  const wasmUrl = new URL(WASM_FILE[backend], ortBase).href;
  const version = ort.env.versions.web ?? ort.env.versions.common;
  const { bytes, fromCache } = await cachedFetch(wasmUrl, `onnxruntime-web@${version}`, onProgress);
  const threads = wasmThreads();
  ort.env.wasm.wasmPaths = ortBase.href;
  ort.env.wasm.wasmBinary = bytes;
  ort.env.wasm.numThreads = threads;
  return { ort, backend, threads, wasmBytes: bytes.length, wasmFromCache: fromCache };
}

/** "WebGPU" or "wasm, 2 threads" for the page. */
export function describeBackend(setup: Pick<OrtSetup, 'backend' | 'threads'>): string {
  if (setup.backend === 'webgpu') return 'WebGPU';
  return `wasm, ${setup.threads} thread${setup.threads === 1 ? '' : 's'}`;
}
