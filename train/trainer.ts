import * as tf from '@tensorflow/tfjs-core';
import { appendFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildModel, getArch, type Seq2SeqModel } from '../models/index.ts';
import { collectParams, collectTensors, loadCheckpoint, restoreTensors, saveCheckpoint } from './checkpoint.ts';
import { Adam } from './optim/adam.ts';
import { TrainingProgress } from './progress.ts';
import { RUN_FILES, readRunConfig, writeRunConfig, type RunConfig } from './run-config.ts';
import { epochCheckpointDir, listEpochCheckpoints } from './run-folder.ts';
import { createSchedule, type ScheduleState } from './schedules/index.ts';
import { getTask, type TaskData } from './tasks/index.ts';

/** What the trainer remembers between sessions; saved with every checkpoint. */
interface TrainerState {
  epoch: number;
  /** Next batch of `epoch` to train on (0 at an epoch boundary). */
  batch: number;
  step: number;
  learningRate: number;
  elapsedMs: number;
  /** The schedule's state (train/schedules/); a plateau's in checkpoints from before the registry. */
  schedule: ScheduleState;
  bestBleu: number;
  done: boolean;
  stopReason?: string;
  /** Budget stops are lifted by a resume with a larger budget; a plateau stop is final. */
  stopKind?: 'epochs' | 'time' | 'updates' | 'plateau';
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
 * Starts a new run in `runDir` (which must not already hold one). The loop is the same for every
 * task; the task (train/tasks/) supplies the data, the batches and the validation score.
 */
export async function train(config: RunConfig, runDir: string, opts: TrainOptions = {}): Promise<TrainResult> {
  if (existsSync(join(runDir, RUN_FILES.config))) {
    throw new Error(`${runDir} already holds a run; use --resume ${runDir} to continue it, or choose another --out`);
  }
  checkArchForTask(config);
  await mkdir(join(runDir, 'checkpoints'), { recursive: true });
  await writeRunConfig(runDir, config);
  return runTraining(config, runDir, null, opts);
}

/** Continues the run in `runDir` from its last checkpoint; `overrides` may extend its budget. */
export async function resume(
  runDir: string,
  overrides: Partial<Pick<RunConfig, 'epochs' | 'maxMinutes' | 'maxUpdates'>> = {},
  opts: TrainOptions = {},
): Promise<TrainResult> {
  const config = { ...(await readRunConfig(runDir)), ...stripUndefined(overrides) };
  await writeRunConfig(runDir, config);
  const lastDir = join(runDir, RUN_FILES.last);
  const checkpoint = existsSync(lastDir) ? await loadCheckpoint(lastDir) : null;
  return runTraining(config, runDir, checkpoint, opts);
}

async function runTraining(
  config: RunConfig,
  runDir: string,
  checkpoint: Awaited<ReturnType<typeof loadCheckpoint>> | null,
  opts: TrainOptions,
): Promise<TrainResult> {
  const progress = new TrainingProgress(opts.quiet);
  const task = checkArchForTask(config);
  const data = await task.prepare(config, runDir, existsSync(join(runDir, RUN_FILES.tgtVocab)), (line) =>
    progress.log(line),
  );
  progress.log(data.summary);
  const model = buildModel(config.arch, config.archConfig, data.sizes, config.head, config.seed);
  const counts = model.params.counts();
  progress.log(
    `model: ${config.arch}/${config.preset} head ${config.head.name}: ${counts.learnable} learnable, ${counts.frozen} frozen parameters`,
  );
  const optimizer = new Adam(model.params.learnable, {
    learningRate: config.optim.learningRate,
    clipNorm: config.optim.clipNorm,
    beta1: config.optim.betas[0],
    beta2: config.optim.betas[1],
    epsilon: config.optim.epsilon,
  });
  const schedule = createSchedule(config.schedule, { learningRate: config.optim.learningRate });
  const smoothing = config.labelSmoothing;
  let nllSum = 0;
  const lossOptions = { labelSmoothing: smoothing, onNll: (v: number) => (nllSum += v) };

  let state: TrainerState = {
    epoch: 0,
    batch: 0,
    step: 0,
    learningRate: config.optim.learningRate,
    elapsedMs: 0,
    schedule: schedule.state,
    bestBleu: -Infinity,
    done: false,
  };
  if (checkpoint) {
    restoreTensors(model, optimizer, checkpoint.tensors, runDir);
    state = checkpoint.state as unknown as TrainerState;
    schedule.state = { ...state.schedule, best: state.schedule.best ?? -Infinity };
    optimizer.step = state.step;
    optimizer.learningRate = state.learningRate;
    if (state.done && state.stopKind !== 'plateau') state.done = false;
    progress.log(`resumed at epoch ${state.epoch + 1}, batch ${state.batch}, step ${state.step}`);
  }
  await dropLostMetrics(runDir, state.step);

  const budgetMs = (config.maxMinutes ?? Infinity) * 60_000;
  const maxUpdates = config.maxUpdates ?? Infinity;
  // Which budget ended the run: time, or the update count (checked after every update, as time is).
  const budgetStop = (): Pick<TrainerState, 'stopKind' | 'stopReason'> | null =>
    state.step >= maxUpdates
      ? { stopKind: 'updates', stopReason: `reached ${config.maxUpdates} updates` }
      : elapsed() >= budgetMs
        ? { stopKind: 'time', stopReason: `time budget of ${config.maxMinutes} minutes used` }
        : null;
  const save = async (which: 'last' | 'best') =>
    saveCheckpoint(join(runDir, which === 'last' ? RUN_FILES.last : RUN_FILES.best), collectTensors(model, optimizer), {
      ...state,
      schedule: schedule.state,
    } as unknown as Record<string, unknown>);

  // checkpoints/epoch-NNNN after a whole epoch: the parameters alone, for averaging; the oldest beyond keepLast go.
  const saveEpoch = async (epoch: number) => {
    await saveCheckpoint(epochCheckpointDir(runDir, epoch), collectParams(model), {
      ...state,
      schedule: schedule.state,
    } as unknown as Record<string, unknown>);
    const kept = listEpochCheckpoints(runDir);
    for (const old of kept.slice(0, Math.max(0, kept.length - config.keepLast)))
      await rm(old.dir, { recursive: true, force: true });
  };

  let sessionStart = Date.now() - state.elapsedMs;
  const elapsed = () => Date.now() - sessionStart;
  let lastSave = Date.now();

  while (!state.done) {
    if (config.epochs !== undefined && state.epoch >= config.epochs) {
      state.done = true;
      state.stopKind = 'epochs';
      state.stopReason = `reached ${config.epochs} epochs`;
      break;
    }
    const stopBefore = budgetStop();
    if (stopBefore) {
      Object.assign(state, { done: true, ...stopBefore });
      break;
    }
    const plan = data.epoch(state.epoch);
    progress.startEpoch(state.epoch + 1, plan.length, state.batch);
    let lossSum = 0;
    nllSum = 0;
    let lossTokens = 0;
    let epochTokens = 0;
    const epochStart = Date.now();
    let budgetUsed: ReturnType<typeof budgetStop> = null;
    const startBatch = state.batch;
    for (let i = state.batch; i < plan.length; i++) {
      const batch = plan.batch(i);
      optimizer.learningRate = schedule.rateAt(state.step + 1, optimizer.learningRate);
      const { loss } = optimizer.minimize(
        () => tf.div(model.lossSum(batch, true, lossOptions), batch.tokens) as tf.Scalar,
      );
      if (!Number.isFinite(loss))
        throw new Error(`training diverged at step ${state.step + 1} (loss ${loss}); try a lower --lr`);
      state.step += 1;
      state.batch = i + 1;
      lossSum += loss * batch.tokens;
      lossTokens += batch.tokens;
      epochTokens += batch.tokens;
      const seconds = (Date.now() - epochStart) / 1000;
      const tps = epochTokens / Math.max(seconds, 1e-3);
      const batchesDone = i + 1 - startBatch;
      progress.update({
        epoch: state.epoch + 1,
        batch: i + 1,
        batches: plan.length,
        loss: lossSum / lossTokens,
        tokensPerSecond: tps,
        etaSeconds: ((plan.length - i - 1) * seconds) / Math.max(1, batchesDone),
      });
      budgetUsed = budgetStop();
      if (budgetUsed) break;
      if (Date.now() - lastSave >= config.checkpointMinutes * 60_000) {
        state.elapsedMs = elapsed();
        await save('last');
        lastSave = Date.now();
      }
    }
    progress.endEpoch();
    // An epoch whose last batch used the budget is still whole.
    const complete = budgetUsed === null || state.batch === plan.length;
    const validation = await data.validate(model);
    const bleu = typeof validation === 'number' ? validation : validation.score;
    const valScores = typeof validation === 'number' ? undefined : validation.more;
    const verdict = schedule.observe(bleu, state.epoch, optimizer.learningRate);
    optimizer.learningRate = verdict.learningRate;
    if (verdict.note) progress.log(verdict.note);
    state.learningRate = optimizer.learningRate;
    state.bestBleu = Math.max(state.bestBleu, bleu);
    if (complete) {
      state.epoch += 1;
      state.batch = 0;
    }
    if (verdict.stop) {
      state.done = true;
      state.stopKind = 'plateau';
      state.stopReason = `no validation gain for ${config.schedule.stopAfter} epochs`;
    }
    if (budgetUsed && !state.done) Object.assign(state, { done: true, ...budgetUsed });
    state.elapsedMs = elapsed();
    const metrics: EpochMetrics = {
      epoch: complete ? state.epoch : state.epoch + 1,
      step: state.step,
      trainLoss: lossTokens ? lossSum / lossTokens : NaN,
      ...(smoothing > 0 ? { trainNll: lossTokens ? nllSum / lossTokens : NaN } : {}),
      tokens: epochTokens,
      valBleu: bleu,
      ...(valScores ? { valScores } : {}),
      learningRate: state.learningRate,
      tokensPerSecond: epochTokens / Math.max((Date.now() - epochStart) / 1000, 1e-3),
      elapsedMinutes: state.elapsedMs / 60_000,
      best: verdict.improved,
      complete,
    };
    await appendFile(
      join(runDir, RUN_FILES.metrics),
      `${JSON.stringify({ time: new Date().toISOString(), ...metrics })}\n`,
    );
    progress.log(
      `epoch ${metrics.epoch}${complete ? '' : ' (partial)'}: ${epochTokens} tokens, loss ${metrics.trainLoss.toFixed(3)}${metrics.trainNll === undefined ? '' : ` (nll ${metrics.trainNll.toFixed(3)})`}, val BLEU ${bleu.toFixed(2)}${verdict.improved ? ' (best)' : ''}${formatScores(valScores)}, ${Math.round(metrics.tokensPerSecond)} tok/s`,
    );
    opts.onEpoch?.(metrics);
    if (verdict.improved) await save('best');
    await save('last');
    if (complete && config.keepLast > 0) await saveEpoch(state.epoch);
    lastSave = Date.now();
    sessionStart = Date.now() - state.elapsedMs;
  }
  if (state.done && state.stopReason) {
    await save('last');
    progress.log(`stopped: ${state.stopReason}; best val BLEU ${state.bestBleu.toFixed(2)}`);
  }
  optimizer.dispose();
  return {
    runDir,
    bestBleu: state.bestBleu,
    epochs: state.epoch,
    steps: state.step,
    stopReason: state.stopReason ?? '',
    model,
    data,
  };
}

/**
 * An epoch's metrics line is written before its checkpoint is saved, so a run killed in between has a line
 * for work the checkpoint does not hold; resuming would train that epoch again and log it twice. Lines past
 * the checkpoint's step go (a new run, or one killed before its first save, keeps none).
 */
export async function dropLostMetrics(runDir: string, step: number): Promise<void> {
  const path = join(runDir, RUN_FILES.metrics);
  if (!existsSync(path)) return;
  const lines = (await readFile(path, 'utf8')).split('\n').filter((l) => l.trim() !== '');
  const kept = lines.filter((l) => {
    try {
      const lineStep = (JSON.parse(l) as { step?: unknown }).step;
      return !(typeof lineStep === 'number' && lineStep > step);
    } catch {
      return true;
    }
  });
  if (kept.length < lines.length) await writeFile(path, kept.map((l) => `${l}\n`).join(''));
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
