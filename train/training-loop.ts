import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type HasParams, type LoadedCheckpoint } from './checkpoint.ts';
import { InterruptWatch, TrainingInterrupted } from './interrupt.ts';
import { LoopSession } from './loop-session.ts';
import { Adam } from './optim/adam.ts';
import { ParameterAverage } from './optim/parameter-average.ts';
import type { TrainingProgress } from './progress.ts';
import { RUN_FILES, writeRunConfig, type RunConfig } from './run-config.ts';
import { resumeCheckpoint, type ResumeCheckpoint } from './resume-checkpoint.ts';
import type { LrSchedule, ScheduleState } from './schedules/index.ts';

/**
 * The epoch loop of the one trainer (train/trainer.ts, for every task in train/tasks/): updates,
 * the learning-rate schedule, the epoch, time and update budgets, validation after every epoch,
 * metrics.jsonl, checkpoints and resume. A task supplies only what is its own: an epoch's updates,
 * the validation and how its metrics read (`LoopTask`). One loop, so a budget or checkpoint rule
 * cannot drift between tasks. SIGINT and SIGTERM while it trains save `last` and end the run (train/interrupt.ts).
 */

/**
 * What a trainer remembers between sessions; saved with every checkpoint, so its field names are
 * the checkpoint format. A trainer's state adds its best validation score (`bestBleu`, ...).
 */
export interface LoopState {
  epoch: number;
  /** Next batch of `epoch` to train on (0 at an epoch boundary). */
  batch: number;
  step: number;
  learningRate: number;
  elapsedMs: number;
  /** The schedule's state (train/schedules/); a plateau's in checkpoints from before the registry. */
  schedule: ScheduleState;
  done: boolean;
  stopReason?: string;
  /** Budget stops are lifted by a resume with a larger budget; a plateau stop is final. */
  stopKind?: 'epochs' | 'time' | 'updates' | 'plateau';
}

/** A new run's state, before its first update; a trainer adds its best-so-far field. */
export function newLoopState(learningRate: number, schedule: LrSchedule): LoopState {
  return { epoch: 0, batch: 0, step: 0, learningRate, elapsedMs: 0, schedule: schedule.state, done: false };
}

/** How a run ended, as the trainers' results report it. */
export function loopOutcome(state: LoopState): { epochs: number; steps: number; stopReason: string } {
  return { epochs: state.epoch, steps: state.step, stopReason: state.stopReason ?? '' };
}

/** One epoch's updates, as the task trains them (a batch each, or a window each). */
export interface EpochUpdates {
  length: number;
  /** One optimiser update on batch `i`: its mean loss per token, and the tokens that mean is over. */
  train(i: number): { loss: number; tokens: number };
  /** Called once the session stops training this epoch (its end, or a budget): frees what it held. */
  end?(): void;
}

/** An epoch (or the part of it this session trained) after its validation, for the task's metrics line. */
export interface EpochSummary {
  /** The epoch's number as metrics.jsonl counts it: 1-based, a partial epoch numbered as the one it is in. */
  epoch: number;
  step: number;
  complete: boolean;
  /** Mean training loss per token (NaN when no batch was trained). */
  trainLoss: number;
  /** Tokens trained on this session. */
  tokens: number;
  /** Seconds spent training (validation excluded). */
  trainSeconds: number;
  /** Seconds since the epoch started, validation included. */
  epochSeconds: number;
  learningRate: number;
  elapsedMinutes: number;
  /** Whether the validation was the best yet (the `best` checkpoint is saved). */
  best: boolean;
}

/** What a trainer's task adds to the loop. `V` is its validation result, `M` its metrics.jsonl line. */
export interface LoopTask<S extends LoopState, V, M extends object> {
  /** What the resume line calls a position inside an epoch ('batch', 'window'). */
  unit: string;
  plan(epoch: number): EpochUpdates;
  validate(): Promise<V> | V;
  /** The validation's score for the schedule, which maximises it. */
  score(validation: V): number;
  /** Records the validation in the state's best-so-far field. */
  keepBest(state: S, validation: V): void;
  /** The epoch's metrics.jsonl line and its log line. */
  report(summary: EpochSummary, validation: V): { metrics: M; line: string };
  /** The best validation so far, for the last log line ('best val BLEU 31.20'). */
  bestText(state: S): string;
}

/** The run config's settings the loop reads. */
export type LoopConfig = Pick<
  RunConfig,
  'epochs' | 'maxMinutes' | 'maxUpdates' | 'checkpointMinutes' | 'keepLast' | 'schedule' | 'emaDecay'
>;

export interface LoopRun<S extends LoopState, V, M extends object> {
  runDir: string;
  config: LoopConfig;
  model: HasParams;
  optimizer: Adam;
  schedule: LrSchedule;
  progress: TrainingProgress;
  /** A new run's state; replaced by the checkpoint's when resuming. */
  state: S;
  /** Where a resume continues from; `from` and `removed` (loadLastCheckpoint's) go into its log lines. */
  checkpoint: (LoadedCheckpoint & Partial<Pick<ResumeCheckpoint, 'from' | 'removed'>>) | null;
  task: LoopTask<S, V, M>;
  onEpoch?: (metrics: M) => void;
}

/**
 * Makes `runDir` a new run folder holding `config`.
 * @throws Error when it already holds a run (resuming is a separate command)
 */
export async function startRunFolder(runDir: string, config: RunConfig): Promise<void> {
  if (existsSync(join(runDir, RUN_FILES.config)))
    throw new Error(`${runDir} already holds a run; use --resume ${runDir} to continue it, or choose another --out`);
  await mkdir(join(runDir, 'checkpoints'), { recursive: true });
  await writeRunConfig(runDir, config);
}

/**
 * The checkpoint a resume continues from: the newest complete one, `last` or one an interrupted save left
 * under a temporary name (train/resume-checkpoint.ts), with the leftovers of interrupted saves removed.
 * @throws Error naming the run folder when there is none: a resume never starts the run again from zero
 */
export function loadLastCheckpoint(runDir: string): Promise<ResumeCheckpoint> {
  return resumeCheckpoint(runDir);
}

/** Adam over the model's learnable parameters, as the run config sets it. */
export function createOptimizer(model: HasParams, optim: RunConfig['optim']): Adam {
  return new Adam(model.params.learnable, {
    learningRate: optim.learningRate,
    clipNorm: optim.clipNorm,
    beta1: optim.betas[0],
    beta2: optim.betas[1],
    epsilon: optim.epsilon,
  });
}

/** The log line that names the model and counts its parameters. */
export function modelLine(config: Pick<RunConfig, 'arch' | 'preset' | 'head'>, model: HasParams): string {
  const counts = model.params.counts();
  return `model: ${config.arch}/${config.preset} head ${config.head.name}: ${counts.learnable} learnable, ${counts.frozen} frozen parameters`;
}

/**
 * Trains epoch after epoch until a budget, the epoch count or the schedule stops the run; returns its last state.
 * @throws TrainingInterrupted after saving `last`, when SIGINT or SIGTERM arrived while it trained
 */
export async function runEpochs<S extends LoopState, V, M extends object>(run: LoopRun<S, V, M>): Promise<S> {
  const interrupts = new InterruptWatch();
  const { emaDecay } = run.config;
  const average = emaDecay === undefined ? null : new ParameterAverage(run.model.params.learnable, emaDecay);
  interrupts.start();
  try {
    return await trainEpochs(run, interrupts, average);
  } finally {
    interrupts.stop();
    average?.dispose();
  }
}

async function trainEpochs<S extends LoopState, V, M extends object>(
  run: LoopRun<S, V, M>,
  interrupts: InterruptWatch,
  average: ParameterAverage | null,
): Promise<S> {
  const { config, progress, task } = run;
  const session = await LoopSession.start(run, average);
  const { state } = session;
  while (!state.done) {
    if (config.epochs !== undefined && state.epoch >= config.epochs) {
      Object.assign(state, { done: true, stopKind: 'epochs', stopReason: `reached ${config.epochs} epochs` });
      break;
    }
    const stopBefore = session.budgetStop();
    if (stopBefore) {
      Object.assign(state, { done: true, ...stopBefore });
      break;
    }
    // A signal during the last epoch's validation or saves is acted on here, once they are done (after
    // the checks above, so a run that has just ended ends as finished, and the signal is reported below).
    if (interrupts.signal) await session.stopOnSignal(interrupts.signal);
    const trained = await session.trainEpoch(interrupts);
    // An epoch stopped by a signal is not validated (that can take minutes): it has no metrics line
    // yet, and the session that finishes it writes one, as after a periodic save.
    if (trained.interrupted) await session.stopOnSignal(trained.interrupted);
    await session.endEpoch(trained);
  }
  if (state.done && state.stopReason) {
    await session.saveLast();
    progress.log(`stopped: ${state.stopReason}; ${task.bestText(state)}`);
  }
  // A signal during the final validation: the run is whole and saved, but the caller's work after it is not wanted.
  const late = interrupts.signal;
  if (late) throw new TrainingInterrupted(late, `interrupted by ${late} as the run ended: saved (${state.stopReason})`);
  return state;
}
