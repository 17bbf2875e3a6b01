/**
 * What a training step's phase profile (bench/step-phases.ts records it, bench:train reports it) says: the step split
 * into data, forward, backward, optimizer and other, each phase's GEMM share, and the non-GEMM kernels that cost the
 * most: what to fuse next, toward a step that is nothing but GEMMs.
 *
 * Two kinds of steps feed it. The measured steps (the ones bench:train's tokens/s come from) time only the phase
 * boundaries, a handful of performance.now() calls a step, so their figures are the phases' true wall times. A few
 * profiled steps after them, on the same batches, time every kernel as well (bench/kernel-timers.ts: a timer pair a
 * call, thousands of calls a step): the GEMM and per-kernel split comes from those, its shares of their own phase
 * times, so the timers' cost never reaches the measured figures.
 */

/**
 * data: tensors made from JS values (engine.makeTensor: the batch's ids, lengths and masks, and the ops' scalar
 * constants) copied onto the backend; forward: the loss, from the start of the gradient's function until the engine
 * starts its backward walk; backward: that walk, until the gradients are returned; optimizer: everything after (the
 * gradients' norm, clipping, the Adam update, disposing the gradients); other: the rest of the step (the gradient
 * call's set-up before the loss runs).
 */
export const PHASES = ['data', 'forward', 'backward', 'optimizer', 'other'] as const;
export type Phase = (typeof PHASES)[number];
export type PhaseMs = Record<Phase, number>;

/** Kernels that are a matrix product: their self time (less the kernels they call) is the step's GEMM time. */
export const GEMM_KERNELS: ReadonlySet<string> = new Set(['BatchMatMul', '_FusedMatMul', 'Conv2D']);

export const zeroPhaseMs = (): PhaseMs => ({ data: 0, forward: 0, backward: 0, optimizer: 0, other: 0 });

/** One kernel's calls in one phase, summed over the profiled steps. */
export interface KernelTotal {
  phase: Phase;
  kernel: string;
  /** The kernel that called it through the registry (softmax-xent.ts' Max and Sum), if one did. */
  parent?: string;
  /** Self time: the kernel's wall time less that of the kernels it called through the registry. */
  ms: number;
  calls: number;
}

/** Steps' phase wall times, summed over them. */
export interface PhaseTimes {
  steps: number;
  ms: PhaseMs;
}

/** The profiled steps: phase times with every kernel timed, and the kernels' times by phase. */
export interface ProfiledSteps extends PhaseTimes {
  kernels: KernelTotal[];
  /** Time inside the native GEMM runner's calls (train/backend/kernels/native-gemm.ts), by phase. */
  nativeGemmMs: PhaseMs;
  /** The measured steps on the profiled steps' batches, their wall time summed: what the timers cost, under noise. */
  sameBatchesMeasuredMs: number;
}

/** A frost worker's phase profile (in results.json as each frost result's `phases`). */
export interface StepPhases {
  measured: PhaseTimes;
  profiled?: ProfiledSteps;
}

const sumMs = (ms: PhaseMs) => PHASES.reduce((a, p) => a + ms[p], 0);
const addMs = (a: PhaseMs, b: PhaseMs): PhaseMs => Object.fromEntries(PHASES.map((p) => [p, a[p] + b[p]])) as PhaseMs;

/** What tells kernel totals apart: phase, kernel and caller. */
export const kernelKey = (k: Pick<KernelTotal, 'phase' | 'kernel' | 'parent'>) =>
  `${k.phase}/${k.kernel}/${k.parent ?? ''}`;

/** Kernel totals with equal phase, kernel and caller added into one. */
function mergeKernels(kernels: KernelTotal[]): KernelTotal[] {
  const byKey = new Map<string, KernelTotal>();
  for (const k of kernels) {
    const key = kernelKey(k);
    const r = byKey.get(key);
    if (r == null) byKey.set(key, { ...k });
    else {
      r.ms += k.ms;
      r.calls += k.calls;
    }
  }
  return [...byKey.values()];
}

/** Several workers' profiles (bench:train's rounds) as one: their steps added up. */
export function mergeStepPhases(list: StepPhases[]): StepPhases | undefined {
  if (list.length === 0) return undefined;
  const measured = list.reduce<PhaseTimes>(
    (a, p) => ({ steps: a.steps + p.measured.steps, ms: addMs(a.ms, p.measured.ms) }),
    { steps: 0, ms: zeroPhaseMs() },
  );
  const profiles = list.flatMap((p) => (p.profiled != null ? [p.profiled] : []));
  if (profiles.length === 0) return { measured };
  const profiled = profiles.reduce<ProfiledSteps>(
    (a, p) => ({
      steps: a.steps + p.steps,
      ms: addMs(a.ms, p.ms),
      kernels: [...a.kernels, ...p.kernels],
      nativeGemmMs: addMs(a.nativeGemmMs, p.nativeGemmMs),
      sameBatchesMeasuredMs: a.sameBatchesMeasuredMs + p.sameBatchesMeasuredMs,
    }),
    { steps: 0, ms: zeroPhaseMs(), kernels: [], nativeGemmMs: zeroPhaseMs(), sameBatchesMeasuredMs: 0 },
  );
  return { measured, profiled: { ...profiled, kernels: mergeKernels(profiled.kernels) } };
}

/** One row of the phase table; ms are per step. */
export interface PhaseRow {
  phase: Phase | 'step';
  /** From the measured steps. */
  ms: number;
  /** Of the measured step. */
  share: number;
  /** From the profiled steps (undefined without them), as the rest of the row. */
  profiledMs?: number;
  gemmMs?: number;
  /** GEMM kernels' time as a share of the phase's profiled time. */
  gemmShare?: number;
  /** Of gemmMs, the time inside the native runner's calls (the rest: XNNPACK, operand transposes, set-up). */
  nativeGemmMs?: number;
  otherKernelsMs?: number;
  /** The phase's time outside every kernel: the engine's bookkeeping, the tape, disposal, JS between kernels. */
  outsideKernelsMs?: number;
  calls?: number;
}

/** The phase table's rows: one per phase, then the whole step. */
export function phaseRows(p: StepPhases): PhaseRow[] {
  const m = p.measured;
  const stepMs = sumMs(m.ms) / m.steps;
  const prof = p.profiled;
  const row = (phase: Phase | 'step', measuredMs: number): PhaseRow => {
    const r: PhaseRow = { phase, ms: measuredMs, share: stepMs > 0 ? measuredMs / stepMs : 0 };
    if (prof == null || prof.steps === 0) return r;
    const inPhase = (k: KernelTotal) => phase === 'step' || k.phase === phase;
    const per = (x: number) => x / prof.steps;
    const profiledMs = per(phase === 'step' ? sumMs(prof.ms) : prof.ms[phase]);
    const kernels = prof.kernels.filter(inPhase);
    const gemmMs = per(kernels.filter((k) => GEMM_KERNELS.has(k.kernel)).reduce((a, k) => a + k.ms, 0));
    const kernelMs = per(kernels.reduce((a, k) => a + k.ms, 0));
    return {
      ...r,
      profiledMs,
      gemmMs,
      gemmShare: profiledMs > 0 ? gemmMs / profiledMs : 0,
      nativeGemmMs: per(phase === 'step' ? sumMs(prof.nativeGemmMs) : prof.nativeGemmMs[phase]),
      otherKernelsMs: kernelMs - gemmMs,
      outsideKernelsMs: profiledMs - kernelMs,
      calls: per(kernels.reduce((a, k) => a + k.calls, 0)),
    };
  };
  return [...PHASES.map((phase) => row(phase, m.ms[phase] / m.steps)), row('step', stepMs)];
}

/** One non-GEMM kernel (as called by one caller) over the whole profiled step; ms are per step. */
export interface OpRow {
  kernel: string;
  parent?: string;
  ms: number;
  /** Of the profiled step. */
  share: number;
  calls: number;
  byPhase: PhaseMs;
}

/**
 * The `top` non-GEMM kernels of the profiled steps by self time, most first; a kernel another one calls through the
 * registry is a row of its own per caller (the Max inside FrostSoftmaxXent is that kernel's cost, not attention's).
 */
export function topNonGemmOps(prof: ProfiledSteps, top: number): OpRow[] {
  const stepMs = sumMs(prof.ms) / prof.steps;
  const byKernel = new Map<string, OpRow>();
  for (const k of prof.kernels) {
    if (GEMM_KERNELS.has(k.kernel)) continue;
    const key = kernelKey({ ...k, phase: 'other' });
    const r = byKernel.get(key) ?? {
      kernel: k.kernel,
      ...(k.parent != null ? { parent: k.parent } : {}),
      ms: 0,
      share: 0,
      calls: 0,
      byPhase: zeroPhaseMs(),
    };
    r.ms += k.ms / prof.steps;
    r.calls += k.calls / prof.steps;
    r.byPhase[k.phase] += k.ms / prof.steps;
    byKernel.set(key, r);
  }
  return [...byKernel.values()]
    .map((r) => ({ ...r, share: stepMs > 0 ? r.ms / stepMs : 0 }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, top);
}

const ms1 = (x: number | undefined) => (x == null ? '–' : x >= 100 ? x.toFixed(0) : x.toFixed(1));
const pct = (x: number | undefined) => (x == null ? '–' : `${(100 * x).toFixed(0)}%`);

/** The Markdown of one frost configuration's profile: the phase table and the top non-GEMM kernels. */
export function stepPhaseLines(title: string, p: StepPhases, top = 10): string[] {
  const prof = p.profiled != null && p.profiled.steps > 0 ? p.profiled : undefined;
  const rows = phaseRows(p);
  const lines = [
    `### ${title}`,
    '',
    `${p.measured.steps} measured steps (phase boundaries timed only)` +
      (prof != null
        ? `; GEMM and kernel columns from ${prof.steps} profiled step${prof.steps === 1 ? '' : 's'} after them with every kernel timed, ` +
          `${ms1(sumMs(prof.ms) / prof.steps)} ms/step against ${ms1(prof.sameBatchesMeasuredMs / prof.steps)} for the measured steps on the same batches (the timers' cost, and the machine's noise).`
        : '; no profiled steps (--phase-steps 0): no kernel columns.'),
    '',
    '| phase | ms/step | share of step | profiled ms/step | GEMM kernels ms | GEMM share of phase | of it native runner ms | other kernels ms | outside kernels ms | kernel calls/step |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows
      .map((r) =>
        [
          r.phase === 'step' ? '**step**' : r.phase,
          ms1(r.ms),
          pct(r.share),
          ms1(r.profiledMs),
          ms1(r.gemmMs),
          pct(r.gemmShare),
          ms1(r.nativeGemmMs),
          ms1(r.otherKernelsMs),
          ms1(r.outsideKernelsMs),
          r.calls == null ? '–' : r.calls.toFixed(0),
        ].join(' | '),
      )
      .map((cells) => `| ${cells} |`),
  ];
  if (prof != null) {
    lines.push(
      '',
      `Top ${top} non-GEMM kernels of the profiled step (self time; share of the profiled step):`,
      '',
      '| kernel | ms/step | share | calls/step | µs/call | forward / backward / optimizer ms |',
      '|---|---:|---:|---:|---:|---:|',
      ...topNonGemmOps(prof, top).map(
        (r) =>
          `| ${r.kernel}${r.parent != null ? ` (in ${r.parent})` : ''} | ${ms1(r.ms)} | ${pct(r.share)} | ${r.calls.toFixed(0)} | ${((1000 * r.ms) / Math.max(r.calls, 1e-9)).toFixed(0)} | ` +
          `${ms1(r.byPhase.forward)} / ${ms1(r.byPhase.backward)} / ${ms1(r.byPhase.optimizer)} |`,
      ),
    );
  }
  lines.push('');
  return lines;
}
