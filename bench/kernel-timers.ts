/**
 * Every kernel registered for the current backend, wrapped with a timer: what bench/train-profile.ts and
 * bench:train's step phases (bench/step-phases.ts) read where a step's time goes, and how bench:train counts GEMM
 * FLOPs.
 *
 * Not tf.profile: that reads back every output (a copy of each) and inflates small kernels; this adds one
 * performance.now() pair a call (and process.cpuUsage() with `cpu`). Kernels that call another through the registry
 * (softmax-xent.ts calls Max, Softmax and Sum; the Conv2D gradients call BatchMatMul) are timed at every level:
 * `ms` is a call's whole time, `selfMs` that less the kernels it called, so self times add up to the time spent in
 * kernels without counting a nested call twice, and a nested BatchMatMul is charged as BatchMatMul.
 */
import * as tf from '@tensorflow/tfjs-core';

/** One kernel call, reported when it returns (or throws). */
export interface KernelCall {
  kernelName: string;
  inputs: tf.NamedTensorInfoMap;
  attrs: tf.NamedAttrMap;
  /** Wall time of the call, the kernels it called included. */
  ms: number;
  /** Wall time less that of the timed kernels it called. */
  selfMs: number;
  /** CPU time of the process (every thread) during the call, and less its nested calls' (with `cpu` only). */
  cpuMs?: number;
  selfCpuMs?: number;
  /** 0 for a kernel the engine ran, 1 for one that kernel called through the registry, and so on. */
  depth: number;
  /** The kernel that called this one through the registry (depth > 0). */
  parent?: string;
}

export interface KernelTimers {
  /** How many timed kernels are running now (0: the caller is outside every kernel). */
  readonly depth: number;
  /** Registers the kernels as they were before. */
  restore(): void;
}

const cpuMsSince = (c0: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};

/**
 * Wraps every kernel registered for the current backend so that each call is reported to `onCall`, until
 * `restore()`. Kernels registered after this call are not timed.
 */
export function timeKernels(onCall: (call: KernelCall) => void, opts: { cpu?: boolean } = {}): KernelTimers {
  const backendName = tf.getBackend();
  const originals = tf.getKernelsForBackend(backendName);
  /** Per running call, its kernel and the time of the timed kernels it called so far. */
  const nested: { kernelName: string; ms: number; cpuMs: number }[] = [];
  for (const config of originals) {
    const inner = config.kernelFunc;
    const timed: tf.KernelFunc = (a) => {
      nested.push({ kernelName: config.kernelName, ms: 0, cpuMs: 0 });
      const c0 = opts.cpu ? process.cpuUsage() : null;
      const t0 = performance.now();
      try {
        return inner(a);
      } finally {
        const ms = performance.now() - t0;
        const cpuMs = c0 != null ? cpuMsSince(c0) : undefined;
        const inside = nested.pop()!;
        const parent = nested.at(-1);
        if (parent != null) {
          parent.ms += ms;
          parent.cpuMs += cpuMs ?? 0;
        }
        onCall({
          kernelName: config.kernelName,
          inputs: a.inputs,
          attrs: a.attrs ?? {},
          ms,
          selfMs: ms - inside.ms,
          ...(cpuMs != null ? { cpuMs, selfCpuMs: cpuMs - inside.cpuMs } : {}),
          depth: nested.length,
          ...(parent != null ? { parent: parent.kernelName } : {}),
        });
      }
    };
    tf.unregisterKernel(config.kernelName, backendName);
    tf.registerKernel({ ...config, kernelFunc: timed });
  }
  return {
    get depth() {
      return nested.length;
    },
    restore() {
      for (const config of originals) {
        tf.unregisterKernel(config.kernelName, backendName);
        tf.registerKernel(config);
      }
    },
  };
}
