import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { getBackend } from '@tensorflow/tfjs-core';
import { gemmRunRecord } from './backend/kernels/native-gemm.ts';
import type { LoadedCheckpoint } from './checkpoint.ts';
import { TrainingProgress } from './progress.ts';
import { RUN_FILES, readRunConfig, writeRunConfig, type LmRunConfig, type RunConfig } from './run-config.ts';
import { withRunLock } from './run-lock.ts';
import { createSchedule } from './schedules/index.ts';
import { getTask, type LmResult, type Seq2SeqResult } from './tasks/index.ts';
import {
  createOptimizer,
  loadLastCheckpoint,
  loopOutcome,
  modelLine,
  newLoopState,
  runEpochs,
  startRunFolder,
  type LoopState,
} from './training-loop.ts';

export interface TrainOptions<M extends object = object> {
  quiet?: boolean;
  /** Called after every epoch's validation with its metrics line (the task's: EpochMetrics, LmEpochMetrics). */
  onEpoch?: (metrics: M) => void;
}

/** How a run ended, whatever its task. */
export interface RunOutcome {
  runDir: string;
  epochs: number;
  steps: number;
  stopReason: string;
}

/** A run's outcome and its task's part (the model, its data, the best validation). */
export type TrainResult<R = Seq2SeqResult> = RunOutcome & R;

/** The task's part of the result for a run config: a language model's, or a seq2seq model's. */
export type ResultOf<C extends RunConfig> = C extends LmRunConfig ? LmResult : Seq2SeqResult;

/**
 * Starts a new run in `runDir` (which must not already hold one), holding its lock (train/run-lock.ts)
 * while it trains, as {@link resume} does. The loop is the same for every task; the task (train/tasks/)
 * supplies the data, the model, an update and the validation.
 */
export async function train<C extends RunConfig>(
  config: C,
  runDir: string,
  opts: TrainOptions = {},
): Promise<TrainResult<ResultOf<C>>> {
  getTask(config.task).checkArch(config);
  await mkdir(runDir, { recursive: true });
  return withRunLock(runDir, async () => {
    await startRunFolder(runDir, config);
    return runTraining<ResultOf<C>>(config, runDir, null, opts);
  });
}

/**
 * Continues the run in `runDir` from its last checkpoint; `overrides` may extend its budget. The
 * result is the run's task's: name it (`resume<LmResult>(...)`) for a language-model run.
 */
export async function resume<R = Seq2SeqResult>(
  runDir: string,
  overrides: Partial<Pick<RunConfig, 'epochs' | 'maxMinutes' | 'maxUpdates' | 'checkpointMinutes'>> = {},
  opts: TrainOptions = {},
): Promise<TrainResult<R>> {
  // Read first, so a folder that holds no run is refused as such; locked before the config is rewritten.
  await readRunConfig(runDir);
  return withRunLock(runDir, async () => {
    const config = { ...(await readRunConfig(runDir)), ...stripUndefined(overrides) };
    // Found before the config is rewritten: a run with no checkpoint is refused with its config unchanged.
    const checkpoint = await loadLastCheckpoint(runDir);
    await writeRunConfig(runDir, config);
    return runTraining<R>(config, runDir, checkpoint, opts);
  });
}

async function runTraining<R>(
  config: RunConfig,
  runDir: string,
  checkpoint: LoadedCheckpoint | null,
  opts: TrainOptions,
): Promise<TrainResult<R>> {
  const progress = new TrainingProgress(opts.quiet);
  const task = getTask(config.task);
  task.checkArch(config);
  // Before the data: a schedule refused for its options should cost no corpus preparation.
  const schedule = createSchedule(config.schedule, {
    learningRate: config.optim.learningRate,
    maxUpdates: config.maxUpdates,
    maxMinutes: config.maxMinutes,
  });
  const training = await task.start(config, {
    runDir,
    resuming: existsSync(join(runDir, RUN_FILES.tgtVocab)),
    checkpoint,
    log: (line) => progress.log(line),
  });
  const { model } = training;
  progress.log(modelLine(config, model));
  // What runs this session's GEMMs (a resumed run may run elsewhere): a record, never read back by frost.
  await writeFile(
    join(runDir, RUN_FILES.gemm),
    `${JSON.stringify({ recordedAt: new Date().toISOString(), ...gemmRunRecord(getBackend()) }, null, 2)}\n`,
  );
  const optimizer = createOptimizer(model, config.optim);
  const state = await runEpochs<LoopState, unknown, object>({
    runDir,
    config,
    model,
    optimizer,
    schedule,
    progress,
    state: { ...newLoopState(config.optim.learningRate, schedule), ...training.newState },
    checkpoint,
    onEpoch: opts.onEpoch,
    task: training.loop(optimizer),
  });
  optimizer.dispose();
  return { runDir, ...loopOutcome(state), ...(training.result(state) as R) };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
