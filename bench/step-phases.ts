/**
 * Times a training step's phases (data, forward, backward, optimizer, other: bench/step-phase-report.ts says what
 * each holds) from outside the training code, by hooking the tfjs engine for the length of a step:
 *  - engine.gradients (what tf.variableGrads and Adam.minimize's leanVariableGrads call): the loss function it is
 *    given starts the forward phase; its own tidy('backward', …), the start of the tape's backward walk, the backward
 *    phase; its return the optimizer phase, which lasts to the end of the step;
 *  - engine.makeTensor (every tensor made from JS values, outside kernels): the data phase, carved out of the phase
 *    it interrupts.
 * So train/ has no hook and runs as it does in training: each boundary costs a performance.now() call, each upload
 * two. With `kernels`, every kernel (bench/kernel-timers.ts) and the native GEMM runner's calls are timed too, each
 * charged to the phase it ran in: for the profiled steps only, as their timers cost a little on every call.
 */
import * as tf from '@tensorflow/tfjs-core';
import { nativeGemm, setNativeGemm, type NativeGemm } from '../train/backend/kernels/native-gemm.ts';
import { timeKernels, type KernelTimers } from './kernel-timers.ts';
import {
  kernelKey,
  zeroPhaseMs,
  type KernelTotal,
  type Phase,
  type PhaseMs,
  type PhaseTimes,
} from './step-phase-report.ts';

/** The engine's members the hooks replace, as own properties of the engine for the length of a step. */
interface EngineHooks {
  gradients: (f: () => tf.Tensor, ...rest: unknown[]) => unknown;
  tidy: (nameOrFn: string | (() => unknown), fn?: () => unknown) => unknown;
  makeTensor: (...args: unknown[]) => tf.Tensor;
}

/** Sets `obj[key]` to `make(the current one)` as an own property; the function returned undoes it (once). */
function patch<T extends object, K extends keyof T>(obj: T, key: K, make: (current: T[K]) => T[K]): () => void {
  const own = Object.getOwnPropertyDescriptor(obj, key);
  obj[key] = make(obj[key]);
  let undone = false;
  return () => {
    if (undone) return;
    undone = true;
    if (own != null) Object.defineProperty(obj, key, own);
    else delete obj[key];
  };
}

/** `fn` with each call's wall time added to `add`. */
function timed<A extends unknown[]>(fn: (...args: A) => void, add: (ms: number) => void): (...args: A) => void {
  return (...args) => {
    const t0 = performance.now();
    try {
      fn(...args);
    } finally {
      add(performance.now() - t0);
    }
  };
}

/** `runner` with its gemm calls (batched ones too) timed into `add`; everything else is the runner's own. */
function timedRunner(runner: NativeGemm, add: (ms: number) => void): NativeGemm {
  return {
    provider: runner.provider,
    threads: runner.threads,
    description: runner.description,
    ...(runner.kernel != null ? { kernel: runner.kernel } : {}),
    ...(runner.choice != null ? { choice: runner.choice } : {}),
    ...(runner.accepts != null ? { accepts: runner.accepts.bind(runner) } : {}),
    minMacs: runner.minMacs,
    minEntryMacs: runner.minEntryMacs,
    gemm: timed(runner.gemm.bind(runner), add),
    ...(runner.batched != null
      ? { batched: { minMacs: runner.batched.minMacs, gemm: timed(runner.batched.gemm.bind(runner.batched), add) } }
      : {}),
    dispose: () => runner.dispose(),
  };
}

export class StepPhaseRecorder {
  private phase: Phase = 'other';
  private since = 0;
  private steps = 0;
  private readonly ms = zeroPhaseMs();
  private readonly kernels = new Map<string, KernelTotal>();
  private readonly nativeMs = zeroPhaseMs();
  private timers: KernelTimers | null = null;

  /** With `kernels`, every kernel and native GEMM call is timed as well (the profiled steps). */
  constructor(private readonly opts: { kernels?: boolean } = {}) {}

  /** Runs one training step (`fn`) with its phases timed, and returns what it returns. */
  step<T>(fn: () => T): T {
    const undo = this.hook();
    this.phase = 'other';
    this.since = performance.now();
    try {
      return fn();
    } finally {
      this.enter('other');
      for (const u of undo.reverse()) u();
      this.steps += 1;
    }
  }

  /** The steps so far: phase wall times and, with `kernels`, the kernels' self times and the native runner's. */
  totals(): PhaseTimes & { kernels: KernelTotal[]; nativeGemmMs: PhaseMs } {
    return {
      steps: this.steps,
      ms: { ...this.ms },
      kernels: [...this.kernels.values()].map((k) => ({ ...k })),
      nativeGemmMs: { ...this.nativeMs },
    };
  }

  /** Charges the time since the last boundary to the current phase, and starts `next`. */
  private enter(next: Phase): void {
    const now = performance.now();
    this.ms[this.phase] += now - this.since;
    this.since = now;
    this.phase = next;
  }

  /** Installs the step's hooks; returns their undoing, in the order they were installed. */
  private hook(): (() => void)[] {
    const engine = tf.engine() as unknown as EngineHooks;
    // The engine calls the hooks as its own methods (`this` is the engine): they reach the recorder through these.
    const enter = (next: Phase) => this.enter(next);
    const inKernel = () => (this.timers?.depth ?? 0) > 0;
    const current = () => this.phase;
    const undo: (() => void)[] = [];
    let gradientDepth = 0;
    undo.push(
      patch(
        engine,
        'gradients',
        (gradients) =>
          function (this: EngineHooks, f, ...rest) {
            // A gradient taken inside the loss (none of frost's models takes one) is part of the phase it is in.
            if (gradientDepth > 0) return gradients.call(this, f, ...rest);
            gradientDepth++;
            // The engine runs the tape's backward walk in its tidy('backward', …): that call is where backward starts.
            const undoTidy = patch(
              this,
              'tidy',
              (tidy) =>
                function (this: EngineHooks, nameOrFn, fn) {
                  if (nameOrFn === 'backward') {
                    undoTidy();
                    enter('backward');
                  }
                  return tidy.call(this, nameOrFn, fn);
                },
            );
            const forward = () => {
              enter('forward');
              return f();
            };
            try {
              return gradients.call(this, forward, ...rest);
            } finally {
              undoTidy();
              gradientDepth--;
              enter('optimizer');
            }
          },
      ),
    );
    undo.push(
      patch(
        engine,
        'makeTensor',
        (makeTensor) =>
          function (this: EngineHooks, ...args) {
            // A kernel that makes a tensor from values is kernel time, not an upload of the step's data.
            if (inKernel()) return makeTensor.apply(this, args);
            const was = current();
            enter('data');
            try {
              return makeTensor.apply(this, args);
            } finally {
              enter(was);
            }
          },
      ),
    );
    if (this.opts.kernels) {
      const timers = timeKernels((call) => {
        const id = {
          phase: this.phase,
          kernel: call.kernelName,
          ...(call.parent != null ? { parent: call.parent } : {}),
        };
        const key = kernelKey(id);
        const k = this.kernels.get(key) ?? { ...id, ms: 0, calls: 0 };
        k.ms += call.selfMs;
        k.calls += 1;
        this.kernels.set(key, k);
      });
      this.timers = timers;
      undo.push(() => {
        timers.restore();
        this.timers = null;
      });
      const runner = nativeGemm();
      if (runner != null) {
        const timed = timedRunner(runner, (ms) => (this.nativeMs[this.phase] += ms));
        setNativeGemm(timed);
        // Unless BatchMatMul dropped the runner after a failure (it then sets none): that stays.
        undo.push(() => {
          if (nativeGemm() === timed) setNativeGemm(runner);
        });
      }
    }
    return undo;
  }
}
