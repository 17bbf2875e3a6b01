import * as tf from '@tensorflow/tfjs-core';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { buildLanguageModel, type LanguageModel, type LmState } from '../../models/lm/index.ts';
import { collectParams, collectTensors, loadCheckpoint, restoreTensors, saveCheckpoint } from '../checkpoint.ts';
import { TokenStream } from '../data/lm-stream.ts';
import { Adam } from '../optim/adam.ts';
import { TrainingProgress } from '../progress.ts';
import { RUN_FILES, readRunConfig, writeRunConfig, type LmRunConfig } from '../run-config.ts';
import { epochCheckpointDir, listEpochCheckpoints } from '../run-folder.ts';
import { createSchedule, type ScheduleState } from '../schedules/index.ts';
import { scoreStream, type Perplexity } from './lm-evaluate.ts';
import { prepareLmData, type LmData } from './lm-data.ts';

/**
 * The language-model training loop: the train split as `batch.streams` parallel streams, one
 * optimiser step per window of `batch.bptt` tokens, the LSTM state carried from window to window
 * (truncated BPTT: gradients stop at the window's start) and reset at each epoch. Validation is
 * perplexity on the valid split; the schedule and the `best` checkpoint follow it. Checkpoints,
 * metrics.jsonl and the time budget behave as in the seq2seq trainer (train/trainer.ts).
 */
interface LmTrainerState {
  epoch: number;
  /** Next window of `epoch` (0 at an epoch boundary; a resume inside an epoch restarts from a zero state). */
  batch: number;
  step: number;
  learningRate: number;
  elapsedMs: number;
  schedule: ScheduleState;
  bestValPerplexity: number;
  done: boolean;
  stopReason?: string;
  stopKind?: 'epochs' | 'time' | 'plateau';
}

export interface LmEpochMetrics {
  epoch: number;
  step: number;
  trainLoss: number;
  trainPerplexity: number;
  valLoss: number;
  valPerplexity: number;
  learningRate: number;
  tokensPerSecond: number;
  elapsedMinutes: number;
  best: boolean;
  complete: boolean;
}

export interface LmTrainResult {
  runDir: string;
  bestValPerplexity: number;
  epochs: number;
  steps: number;
  stopReason: string;
  model: LanguageModel;
  data: LmData;
}

export interface LmTrainOptions {
  quiet?: boolean;
  onEpoch?: (metrics: LmEpochMetrics) => void;
}

export async function trainLanguageModel(
  config: LmRunConfig,
  runDir: string,
  opts: LmTrainOptions = {},
): Promise<LmTrainResult> {
  if (existsSync(join(runDir, RUN_FILES.config)))
    throw new Error(`${runDir} already holds a run; use --resume ${runDir} to continue it, or choose another --out`);
  await mkdir(join(runDir, 'checkpoints'), { recursive: true });
  await writeRunConfig(runDir, config);
  return runLmTraining(config, runDir, null, opts);
}

export async function resumeLanguageModel(
  runDir: string,
  overrides: Partial<Pick<LmRunConfig, 'epochs' | 'maxMinutes'>> = {},
  opts: LmTrainOptions = {},
): Promise<LmTrainResult> {
  const base = await readRunConfig(runDir);
  if (base.task !== 'lm') throw new TypeError(`${runDir} holds a ${base.task} run, not a language model`);
  const config: LmRunConfig = { ...base };
  if (overrides.epochs !== undefined) config.epochs = overrides.epochs;
  if (overrides.maxMinutes !== undefined) config.maxMinutes = overrides.maxMinutes;
  await writeRunConfig(runDir, config);
  const lastDir = join(runDir, RUN_FILES.last);
  return runLmTraining(config, runDir, existsSync(lastDir) ? await loadCheckpoint(lastDir) : null, opts);
}

/** Perplexity of a split, state carried across windows as in training. */
export function splitPerplexity(model: LanguageModel, ids: Int32Array, streams: number, bptt: number): Perplexity {
  const scored = scoreStream(model, ids, streams, bptt);
  let nllSum = 0;
  for (const lp of scored.logProbs) nllSum -= lp;
  const nll = nllSum / scored.logProbs.length;
  return { tokens: scored.logProbs.length, nll, perplexity: Math.exp(nll) };
}

async function runLmTraining(
  config: LmRunConfig,
  runDir: string,
  checkpoint: Awaited<ReturnType<typeof loadCheckpoint>> | null,
  opts: LmTrainOptions,
): Promise<LmTrainResult> {
  const progress = new TrainingProgress(opts.quiet);
  const data = await prepareLmData(config, runDir, existsSync(join(runDir, RUN_FILES.tgtVocab)));
  progress.log(data.summary);
  const model = buildLanguageModel(config.arch, config.archConfig, data.vocab.size, config.head, config.seed);
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
  let state: LmTrainerState = {
    epoch: 0,
    batch: 0,
    step: 0,
    learningRate: config.optim.learningRate,
    elapsedMs: 0,
    schedule: schedule.state,
    bestValPerplexity: Infinity,
    done: false,
  };
  if (checkpoint) {
    restoreTensors(model, optimizer, checkpoint.tensors, runDir);
    state = checkpoint.state as unknown as LmTrainerState;
    schedule.state = { ...state.schedule, best: state.schedule.best ?? -Infinity };
    optimizer.step = state.step;
    optimizer.learningRate = state.learningRate;
    if (state.done && state.stopKind !== 'plateau') state.done = false;
    progress.log(`resumed at epoch ${state.epoch + 1}, window ${state.batch}, step ${state.step}`);
  }
  const save = (which: 'last' | 'best') =>
    saveCheckpoint(join(runDir, which === 'last' ? RUN_FILES.last : RUN_FILES.best), collectTensors(model, optimizer), {
      ...state,
      schedule: schedule.state,
    } as unknown as Record<string, unknown>);

  // checkpoints/epoch-NNNN after a whole epoch, as the seq2seq trainer keeps them: the parameters
  // alone, for `frost export --average-last`; the oldest beyond keepLast go.
  const saveEpoch = async (epoch: number) => {
    await saveCheckpoint(epochCheckpointDir(runDir, epoch), collectParams(model), {
      ...state,
      schedule: schedule.state,
    } as unknown as Record<string, unknown>);
    const kept = listEpochCheckpoints(runDir);
    for (const old of kept.slice(0, Math.max(0, kept.length - config.keepLast)))
      await rm(old.dir, { recursive: true, force: true });
  };

  const budgetMs = (config.maxMinutes ?? Infinity) * 60_000;
  let sessionStart = Date.now() - state.elapsedMs;
  const elapsed = () => Date.now() - sessionStart;
  let lastSave = Date.now();
  const { streams: B, bptt } = config.batch;
  const train = new TokenStream(data.streams.train, Math.min(B, Math.floor(data.streams.train.length / 2)));
  const windows = train.windowCount(bptt);

  while (!state.done) {
    if (config.epochs !== undefined && state.epoch >= config.epochs) {
      Object.assign(state, { done: true, stopKind: 'epochs', stopReason: `reached ${config.epochs} epochs` });
      break;
    }
    if (elapsed() >= budgetMs) {
      Object.assign(state, {
        done: true,
        stopKind: 'time',
        stopReason: `time budget of ${config.maxMinutes} minutes used`,
      });
      break;
    }
    progress.startEpoch(state.epoch + 1, windows, state.batch);
    let lossSum = 0;
    let lossTokens = 0;
    const epochStart = Date.now();
    let outOfTime = false;
    let carried: LmState = model.initialState(train.B);
    const firstWindow = state.batch;
    for (let k = state.batch; k < windows; k++) {
      const w = train.window(k, bptt);
      let next: LmState = {};
      optimizer.learningRate = schedule.rateAt(state.step + 1, optimizer.learningRate);
      const { loss } = optimizer.minimize(() => {
        const out = model.windowLoss(w, carried, true);
        next = out.state;
        return tf.div(out.lossSum, w.B * w.T) as tf.Scalar;
      });
      tf.dispose(Object.values(carried));
      carried = next;
      if (!Number.isFinite(loss))
        throw new Error(`training diverged at step ${state.step + 1} (loss ${loss}); try a lower --lr`);
      state.step += 1;
      state.batch = k + 1;
      lossSum += loss * w.B * w.T;
      lossTokens += w.B * w.T;
      const seconds = (Date.now() - epochStart) / 1000;
      progress.update({
        epoch: state.epoch + 1,
        batch: k + 1,
        batches: windows,
        loss: lossSum / lossTokens,
        tokensPerSecond: lossTokens / Math.max(seconds, 1e-3),
        // Windows done in this session (a resumed epoch starts at firstWindow), not in the epoch.
        etaSeconds: ((windows - k - 1) * seconds) / (k + 1 - firstWindow),
      });
      if (elapsed() >= budgetMs) {
        outOfTime = true;
        break;
      }
      if (Date.now() - lastSave >= config.checkpointMinutes * 60_000) {
        state.elapsedMs = elapsed();
        await save('last');
        lastSave = Date.now();
      }
    }
    tf.dispose(Object.values(carried));
    progress.endEpoch();
    // Training speed, without the validation pass below.
    const trainSeconds = Math.max((Date.now() - epochStart) / 1000, 1e-3);
    const complete = !outOfTime;
    const val = splitPerplexity(model, data.streams.valid, config.evalStreams, bptt);
    // The schedule maximises its score: the negative validation NLL.
    const verdict = schedule.observe(-val.nll, state.epoch, optimizer.learningRate);
    optimizer.learningRate = verdict.learningRate;
    if (verdict.note) progress.log(verdict.note);
    state.learningRate = optimizer.learningRate;
    state.bestValPerplexity = Math.min(state.bestValPerplexity, val.perplexity);
    if (complete) {
      state.epoch += 1;
      state.batch = 0;
    }
    if (verdict.stop)
      Object.assign(state, {
        done: true,
        stopKind: 'plateau',
        stopReason: `no validation gain for ${config.schedule.stopAfter} epochs`,
      });
    if (outOfTime)
      Object.assign(state, {
        done: true,
        stopKind: 'time',
        stopReason: `time budget of ${config.maxMinutes} minutes used`,
      });
    state.elapsedMs = elapsed();
    const trainLoss = lossTokens ? lossSum / lossTokens : NaN;
    const metrics: LmEpochMetrics = {
      epoch: complete ? state.epoch : state.epoch + 1,
      step: state.step,
      trainLoss,
      trainPerplexity: Math.exp(trainLoss),
      valLoss: val.nll,
      valPerplexity: val.perplexity,
      learningRate: state.learningRate,
      tokensPerSecond: lossTokens / trainSeconds,
      elapsedMinutes: state.elapsedMs / 60_000,
      best: verdict.improved,
      complete,
    };
    await appendFile(
      join(runDir, RUN_FILES.metrics),
      `${JSON.stringify({ time: new Date().toISOString(), ...metrics })}\n`,
    );
    progress.log(
      `epoch ${metrics.epoch}${complete ? '' : ' (partial)'}: train ppl ${metrics.trainPerplexity.toFixed(2)}, val ppl ${val.perplexity.toFixed(2)}${verdict.improved ? ' (best)' : ''}, ${Math.round(metrics.tokensPerSecond)} tok/s`,
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
    progress.log(`stopped: ${state.stopReason}; best val perplexity ${state.bestValPerplexity.toFixed(2)}`);
  }
  optimizer.dispose();
  return {
    runDir,
    bestValPerplexity: state.bestValPerplexity,
    epochs: state.epoch,
    steps: state.step,
    stopReason: state.stopReason ?? '',
    model,
    data,
  };
}
