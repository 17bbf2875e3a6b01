import * as tf from '@tensorflow/tfjs-core';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { buildLanguageModel, type LanguageModel, type LmState } from '../../models/index.ts';
import type { LoadedCheckpoint } from '../checkpoint.ts';
import { TokenStream } from '../data/lm-stream.ts';
import { TrainingProgress } from '../progress.ts';
import { RUN_FILES, readRunConfig, writeRunConfig, type LmRunConfig } from '../run-config.ts';
import { withRunLock } from '../run-lock.ts';
import { createSchedule } from '../schedules/index.ts';
import {
  createOptimizer,
  loadLastCheckpoint,
  loopOutcome,
  modelLine,
  newLoopState,
  runEpochs,
  startRunFolder,
  type LoopState,
} from '../training-loop.ts';
import { scoreStream, type Perplexity } from './lm-evaluate.ts';
import { prepareLmData, type LmData } from './lm-data.ts';

/**
 * The language-model training loop: the train split as `batch.streams` parallel streams, one
 * optimiser step per window of `batch.bptt` tokens, the LSTM state carried from window to window
 * (truncated BPTT: gradients stop at the window's start) and reset at each epoch. Validation is
 * perplexity on the valid split; the schedule and the `best` checkpoint follow it. Checkpoints,
 * metrics.jsonl and the time budget are the shared loop's (train/training-loop.ts), as in the seq2seq trainer.
 */
interface LmTrainerState extends LoopState {
  bestValPerplexity: number;
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
  await mkdir(runDir, { recursive: true });
  return withRunLock(runDir, async () => {
    await startRunFolder(runDir, config);
    return runLmTraining(config, runDir, null, opts);
  });
}

export async function resumeLanguageModel(
  runDir: string,
  overrides: Partial<Pick<LmRunConfig, 'epochs' | 'maxMinutes' | 'maxUpdates'>> = {},
  opts: LmTrainOptions = {},
): Promise<LmTrainResult> {
  const first = await readRunConfig(runDir);
  if (first.task !== 'lm') throw new TypeError(`${runDir} holds a ${first.task} run, not a language model`);
  // Locked before the config is rewritten (train/run-lock.ts).
  return withRunLock(runDir, async () => {
    const base = await readRunConfig(runDir);
    if (base.task !== 'lm') throw new TypeError(`${runDir} holds a ${base.task} run, not a language model`);
    const config: LmRunConfig = { ...base };
    if (overrides.epochs !== undefined) config.epochs = overrides.epochs;
    if (overrides.maxMinutes !== undefined) config.maxMinutes = overrides.maxMinutes;
    if (overrides.maxUpdates !== undefined) config.maxUpdates = overrides.maxUpdates;
    await writeRunConfig(runDir, config);
    return runLmTraining(config, runDir, await loadLastCheckpoint(runDir), opts);
  });
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
  checkpoint: LoadedCheckpoint | null,
  opts: LmTrainOptions,
): Promise<LmTrainResult> {
  const progress = new TrainingProgress(opts.quiet);
  // Before the data: a schedule refused for its options should cost no corpus preparation.
  const schedule = createSchedule(config.schedule, {
    learningRate: config.optim.learningRate,
    maxUpdates: config.maxUpdates,
  });
  const data = await prepareLmData(config, runDir, existsSync(join(runDir, RUN_FILES.tgtVocab)));
  progress.log(data.summary);
  const model = buildLanguageModel(config.arch, config.archConfig, data.vocab.size, config.head, config.seed);
  progress.log(modelLine(config, model));
  const optimizer = createOptimizer(model, config.optim);
  const { streams: B, bptt } = config.batch;
  const train = new TokenStream(data.streams.train, Math.min(B, Math.floor(data.streams.train.length / 2)));
  const windows = train.windowCount(bptt);

  const state = await runEpochs<LmTrainerState, Perplexity, LmEpochMetrics>({
    runDir,
    config,
    model,
    optimizer,
    schedule,
    progress,
    state: { ...newLoopState(config.optim.learningRate, schedule), bestValPerplexity: Infinity },
    checkpoint,
    onEpoch: opts.onEpoch,
    task: {
      unit: 'window',
      plan: () => {
        // The state carried from window to window starts at zero each epoch (and on a resume inside one).
        let carried: LmState = model.initialState(train.B);
        return {
          length: windows,
          train: (k) => {
            const w = train.window(k, bptt);
            let next: LmState = {};
            const { loss } = optimizer.minimize(() => {
              const out = model.windowLoss(w, carried, true);
              next = out.state;
              return tf.div(out.lossSum, w.B * w.T) as tf.Scalar;
            });
            tf.dispose(Object.values(carried));
            carried = next;
            return { loss, tokens: w.B * w.T };
          },
          end: () => tf.dispose(Object.values(carried)),
        };
      },
      validate: () => splitPerplexity(model, data.streams.valid, config.evalStreams, bptt),
      // The schedule maximises its score: the negative validation NLL.
      score: (val) => -val.nll,
      keepBest: (s, val) => {
        s.bestValPerplexity = Math.min(s.bestValPerplexity, val.perplexity);
      },
      report: (e, val) => {
        const metrics: LmEpochMetrics = {
          epoch: e.epoch,
          step: e.step,
          trainLoss: e.trainLoss,
          trainPerplexity: Math.exp(e.trainLoss),
          valLoss: val.nll,
          valPerplexity: val.perplexity,
          learningRate: e.learningRate,
          // Training speed, without the validation pass.
          tokensPerSecond: e.tokens / e.trainSeconds,
          elapsedMinutes: e.elapsedMinutes,
          best: e.best,
          complete: e.complete,
        };
        const line = `epoch ${metrics.epoch}${e.complete ? '' : ' (partial)'}: train ppl ${metrics.trainPerplexity.toFixed(2)}, val ppl ${val.perplexity.toFixed(2)}${e.best ? ' (best)' : ''}, ${Math.round(metrics.tokensPerSecond)} tok/s`;
        return { metrics, line };
      },
      bestText: (s) => `best val perplexity ${s.bestValPerplexity.toFixed(2)}`,
    },
  });
  optimizer.dispose();
  return { runDir, bestValPerplexity: state.bestValPerplexity, ...loopOutcome(state), model, data };
}
