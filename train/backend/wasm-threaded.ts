/**
 * The threaded SIMD build of tfjs-backend-wasm, loaded in Node.
 *
 * Stock tfjs never uses it in Node: flags_wasm.ts answers WASM_HAS_MULTITHREAD_SUPPORT = false when
 * IS_NODE (tfjs issue #3830), and its loader hands emscripten a blob: URL for the pthread worker,
 * which Node's worker_threads cannot start. Node itself runs it fine (shared wasm memory, Atomics,
 * worker_threads), so this module calls the emscripten factory itself:
 *  - the worker script (a string exported by wasm-out/…worker.js, with its "\n" escapes undone the
 *    same way the stock loader does) is written once to a file in the OS temp folder;
 *  - mainScriptUrlOrBlob is the path of wasm-out/tfjs-backend-wasm-threaded-simd.js, which each
 *    worker evaluates to get the module factory;
 *  - the C++ side sizes XNNPACK's pool as min(requested, emscripten_num_logical_cores() / 2, 8),
 *    assuming 2 hyper-threads per core. On a 2-vCPU machine that caps the pool at 1 thread, so the
 *    instantiateWasm hook answers that import with 2·threads;
 *  - the 8 pre-spawned pthread workers are unref'ed, or they would keep the process alive at exit.
 * The backend object is the package's own BackendWasm, registered under the name 'wasm', so every
 * stock and frost kernel registered for 'wasm' applies unchanged.
 *
 * Side effect of the emscripten runtime: it sets globalThis.Worker = worker_threads.Worker.
 * The workers inherit process.execArgv: `--import tsx` is fine (if slow to start, ×8), but a
 * process started with `--input-type=module -e …` cannot start them (Node refuses the flag there).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import * as tfwasm from '@tensorflow/tfjs-backend-wasm';

const require = createRequire(import.meta.url);

/** The package's root folder (…/node_modules/@tensorflow/tfjs-backend-wasm). */
function wasmPackageDir(): string {
  return dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'));
}

interface EmscriptenWorker {
  unref?: () => void;
}

interface ThreadedModule {
  cwrap(name: string, ret: 'number' | null, args: string[]): (...args: number[]) => unknown;
  PThread?: { unusedWorkers: EmscriptenWorker[]; runningWorkers: EmscriptenWorker[] };
  tfjs?: unknown;
}

type Factory = (config: Record<string, unknown>) => Promise<ThreadedModule>;

function workerScriptPath(pkgDir: string): string {
  const { wasmWorkerContents } = require(join(pkgDir, 'wasm-out/tfjs-backend-wasm-threaded-simd.worker.js')) as {
    wasmWorkerContents: string;
  };
  const script = wasmWorkerContents.replace(/\n/g, '\\n');
  const hash = createHash('sha256').update(script).digest('hex').slice(0, 16);
  const file = join(tmpdir(), `frost-tfjs-wasm-worker-${hash}.cjs`);
  if (!existsSync(file)) {
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, script);
    renameSync(partial, file); // atomic: concurrent processes never see a half-written script
  }
  return file;
}

function unrefWorkers(module: ThreadedModule): void {
  const pool = module.PThread;
  if (pool == null) return;
  for (const w of [...pool.unusedWorkers, ...pool.runningWorkers]) w.unref?.();
}

/**
 * Replaces the 'wasm' backend factory with one that loads the threaded SIMD build and asks XNNPACK
 * for `threads` threads. Call before tf.setBackend('wasm'); getThreadsCount() tells what it got.
 */
export function registerThreadedWasmBackend(threads: number, priority = 2): void {
  const pkgDir = wasmPackageDir();
  const jsPath = join(pkgDir, 'wasm-out/tfjs-backend-wasm-threaded-simd.js');
  const wasmPath = join(pkgDir, 'dist/tfjs-backend-wasm-threaded-simd.wasm');
  const factory = require(jsPath) as Factory;
  const workerPath = workerScriptPath(pkgDir);
  const count = Math.max(1, Math.floor(threads));

  const create = async (): Promise<tf.KernelBackend> => {
    const binary = readFileSync(wasmPath);
    let instantiateFailed: (e: unknown) => void = () => {};
    const failed = new Promise<never>((_, reject) => (instantiateFailed = reject));
    const module = await Promise.race([
      factory({
        mainScriptUrlOrBlob: jsPath,
        locateFile: (path: string, prefix: string) =>
          path.endsWith('.worker.js') ? workerPath : path.endsWith('.wasm') ? wasmPath : prefix + path,
        instantiateWasm: (
          imports: { env: Record<string, unknown> },
          receive: (instance: WebAssembly.Instance, module: WebAssembly.Module) => void,
        ) => {
          imports.env.emscripten_num_logical_cores = () => 2 * count;
          WebAssembly.instantiate(binary, imports as WebAssembly.Imports).then(
            ({ instance, module }) => receive(instance, module),
            instantiateFailed,
          );
          return {};
        },
      }),
      failed,
    ]);
    module.tfjs = {
      init: module.cwrap('init', null, []),
      initWithThreadsCount: module.cwrap('init_with_threads_count', null, ['number']),
      getThreadsCount: module.cwrap('get_threads_count', 'number', []),
      registerTensor: module.cwrap('register_tensor', null, ['number', 'number', 'number']),
      disposeData: module.cwrap('dispose_data', null, ['number']),
      dispose: module.cwrap('dispose', null, []),
    };
    tfwasm.setThreadsCount(count);
    const backend = new tfwasm.BackendWasm(module as unknown as ConstructorParameters<typeof tfwasm.BackendWasm>[0]);
    unrefWorkers(module); // after the constructor: it starts the pthreadpool threads
    return backend;
  };

  if (tf.findBackendFactory('wasm') != null) tf.removeBackend('wasm');
  tf.registerBackend('wasm', create, priority);
}
