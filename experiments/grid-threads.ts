import { availableParallelism } from 'node:os';

/**
 * wasm threads per run when the heads of a pair train side by side: the cores shared out, at least
 * one each. Fixed by the number of heads, not of runs still training, so a resumed run trains under
 * the same conditions as the runs that finished before the interruption.
 */
export function threadsPerRun(heads: number, cores = availableParallelism()): number {
  return Math.max(1, Math.floor(cores / heads));
}

/**
 * The environment of one of `together` trainers side by side: both its thread pools get its share of the cores.
 * Two runs each with an OpenMP BLAS as wide as the machine spin against each other (half the CPU went to the kernel,
 * a lightconv step took twice as long). `wasmThreads` overrides the wasm pool's.
 */
export function sideBySideThreads(together: number, wasmThreads?: number): Record<string, string> {
  return threadPools(threadsPerRun(together), wasmThreads);
}

/**
 * A trainer's environment that sizes both its thread pools (wasm's and the native GEMM's) to `share`, the wasm pool
 * to `wasmThreads` when given; an explicit FROST_NATIVE_GEMM_THREADS in `env` wins (other work on the machine).
 */
export function threadPools(
  share: number,
  wasmThreads = share,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  return {
    FROST_WASM_THREADS: String(wasmThreads),
    FROST_NATIVE_GEMM_THREADS: env.FROST_NATIVE_GEMM_THREADS ?? String(share),
  };
}
