import * as tf from '@tensorflow/tfjs-core';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { buildModel, getArch, type Seq2SeqModel } from '../models/index.ts';
import type { LoadedCheckpoint } from './checkpoint.ts';
import { checkOutputRows, outputRows } from './output-support.ts';
import { TrainingProgress } from './progress.ts';
import { RUN_FILES, readRunConfig, writeRunConfig, type RunConfig } from './run-config.ts';
import { withRunLock } from './run-lock.ts';
import { createSchedule } from './schedules/index.ts';
import { getTask, type TaskData } from './tasks/index.ts';
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

/** What the trainer remembers between sessions; saved with every checkpoint. */
interface TrainerState extends LoopState {
  bestBleu: number;
  /** Rows of the output layer (train/output-support.ts `outputRows`); absent in checkpoints from before. */
  outputRows?: number;
}

export interface TrainOptions {
  quiet?: boolean;
  /** Called after every epoch's validation with its metrics line. */
  onEpoch?: (metrics: EpochMetrics) => void;
}

export interface EpochMetrics {
  epoch: number;
  step: number;
  /** Mean loss per target token: label-smoothed when the run smooths. */
  trainLoss: number;
  /** Mean negative log-likelihood per target token; only in runs with label smoothing (else it is trainLoss). */
  trainNll?: number;
  /** Target tokens trained on this epoch (this session's share of it, for a resumed epoch). */
  tokens: number;
  valBleu: number;
  /** The validation's other scores by name (translation: chrF2, chrF2++); absent when there are none. */
  valScores?: Record<string, number>;
  learningRate: number;
  tokensPerSecond: number;
  elapsedMinutes: number;
  best: boolean;
  complete: boolean;
}

export interface TrainResult {
  runDir: string;
  bestBleu: number;
  epochs: number;
  steps: number;
  stopReason: string;
  model: Seq2SeqModel;
  data: TaskData;
}

/**
 * Starts a new run in `runDir` (which must not already hold one), holding its lock (train/run-lock.ts)
 * while it trains, as {@link resume} does. The loop is the same for every
 * task; the task (train/tasks/) supplies the data, the batches and the validation score.
 */
export async function train(config: RunConfig, runDir: string, opts: TrainOptions = {}): Promise<TrainResult> {
  checkArchForTask(config);
  await mkdir(runDir, { recursive: true });
  return withRunLock(runDir, async () => {
    await startRunFolder(runDir, config);
    return runTraining(config, runDir, null, opts);
  });
}

/** Continues the run in `runDir` from its last checkpoint; `overrides` may extend its budget. */
export async function resume(
  runDir: string,
  overrides: Partial<Pick<RunConfig, 'epochs' | 'maxMinutes' | 'maxUpdates' | 'checkpointMinutes'>> = {},
  opts: TrainOptions = {},
): Promise<TrainResult> {
  // Read first, so a folder that holds no run is refused as such; locked before the config is rewritten.
  await readRunConfig(runDir);
  return withRunLock(runDir, async () => {
    const config = { ...(await readRunConfig(runDir)), ...stripUndefined(overrides) };
    // Found before the config is rewritten: a run with no checkpoint is refused with its config unchanged.
    const checkpoint = await loadLastCheckpoint(runDir);
    await writeRunConfig(runDir, config);
    return runTraining(config, runDir, checkpoint, opts);
  });
}

async function runTraining(
  config: RunConfig,
  runDir: string,
  checkpoint: LoadedCheckpoint | null,
  opts: TrainOptions,
): Promise<TrainResult> {
  const progress = new TrainingProgress(opts.quiet);
  const task = checkArchForTask(config);
  // Before the data: a schedule refused for its options should cost no corpus preparation.
  const schedule = createSchedule(config.schedule, {
    learningRate: config.optim.learningRate,
    maxUpdates: config.maxUpdates,
  });
  const data = await task.prepare(config, runDir, existsSync(join(runDir, RUN_FILES.tgtVocab)), (line) =>
    progress.log(line),
  );
  progress.log(data.summary);
  const model = buildModel(config.arch, config.archConfig, data.sizes, config.head, config.seed);
  if (checkpoint) {
    try {
      checkOutputRows(checkpoint.state, outputRows(model.head, data.sizes.tgtVocab), data.sizes.tgtVocab, runDir);
    } catch (err) {
      model.params.dispose();
      throw err;
    }
  }
  progress.log(modelLine(config, model));
  const optimizer = createOptimizer(model, config.optim);
  const smoothing = config.labelSmoothing;
  let nllSum = 0;
  const lossOptions = { labelSmoothing: smoothing, onNll: (v: number) => (nllSum += v) };

  const state = await runEpochs<TrainerState, Validation, EpochMetrics>({
    runDir,
    config,
    model,
    optimizer,
    schedule,
    progress,
    state: {
      ...newLoopState(config.optim.learningRate, schedule),
      bestBleu: -Infinity,
      outputRows: outputRows(model.head, data.sizes.tgtVocab),
    },
    checkpoint,
    onEpoch: opts.onEpoch,
    task: {
      unit: 'batch',
      plan: (epoch) => {
        const plan = data.epoch(epoch);
        // The epoch's NLL, summed by lossOptions.onNll, for label-smoothed runs' metrics.
        nllSum = 0;
        return {
          length: plan.length,
          train: (i) => {
            const batch = plan.batch(i);
            const { loss } = optimizer.minimize(
              () => tf.div(model.lossSum(batch, true, lossOptions), batch.tokens) as tf.Scalar,
            );
            return { loss, tokens: batch.tokens };
          },
        };
      },
      validate: () => data.validate(model),
      score: bleuOf,
      keepBest: (s, validation) => {
        s.bestBleu = Math.max(s.bestBleu, bleuOf(validation));
      },
      report: (e, validation) => {
        const bleu = bleuOf(validation);
        const valScores = typeof validation === 'number' ? undefined : validation.more;
        const metrics: EpochMetrics = {
          epoch: e.epoch,
          step: e.step,
          trainLoss: e.trainLoss,
          ...(smoothing > 0 ? { trainNll: e.tokens ? nllSum / e.tokens : NaN } : {}),
          tokens: e.tokens,
          valBleu: bleu,
          ...(valScores ? { valScores } : {}),
          learningRate: e.learningRate,
          // Over the epoch's whole time, its validation included.
          tokensPerSecond: e.tokens / e.epochSeconds,
          elapsedMinutes: e.elapsedMinutes,
          best: e.best,
          complete: e.complete,
        };
        const line = `epoch ${metrics.epoch}${e.complete ? '' : ' (partial)'}: ${e.tokens} tokens, loss ${metrics.trainLoss.toFixed(3)}${metrics.trainNll === undefined ? '' : ` (nll ${metrics.trainNll.toFixed(3)})`}, val BLEU ${bleu.toFixed(2)}${e.best ? ' (best)' : ''}${formatScores(valScores)}, ${Math.round(metrics.tokensPerSecond)} tok/s`;
        return { metrics, line };
      },
      bestText: (s) => `best val BLEU ${s.bestBleu.toFixed(2)}`,
    },
  });
  optimizer.dispose();
  return { runDir, bestBleu: state.bestBleu, ...loopOutcome(state), model, data };
}

/** A task's validation: its score alone, or its score and others by name. */
type Validation = Awaited<ReturnType<TaskData['validate']>>;

function bleuOf(validation: Validation): number {
  return typeof validation === 'number' ? validation : validation.score;
}

/** The run's task, after checking that its architecture encodes what the task feeds (images or token ids). */
function checkArchForTask(config: RunConfig) {
  const task = getTask(config.task);
  const archKind = getArch(config.arch).inputKind;
  if (archKind !== task.inputKind) {
    const what = (kind: string) => (kind === 'image' ? 'images' : 'token ids');
    throw new Error(
      `architecture '${config.arch}' encodes ${what(archKind)}; a ${config.task} run needs one that encodes ${what(task.inputKind)}`,
    );
  }
  return task;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** `, chrF2 51.20, chrF2++ 49.80` for the epoch line. */
function formatScores(scores: Record<string, number> | undefined): string {
  return scores
    ? Object.entries(scores)
        .map(([name, value]) => `, ${name} ${value.toFixed(2)}`)
        .join('')
    : '';
}
