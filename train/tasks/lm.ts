import * as tf from '@tensorflow/tfjs-core';
import { buildLanguageModel, getLmArch, type LanguageModel, type LmState } from '../../models/index.ts';
import { TokenStream } from '../data/lm-stream.ts';
import { prepareLmData, type LmData } from '../lm/lm-data.ts';
import { scoreStream, type Perplexity } from '../lm/lm-evaluate.ts';
import type { LmRunConfig } from '../run-config.ts';
import type { LoopState } from '../training-loop.ts';
import { registerTask } from './registry.ts';
import type { TaskTraining } from './types.ts';

/** What a language-model run remembers between sessions; saved with every checkpoint. */
interface LmTrainerState extends LoopState {
  bestValPerplexity: number;
}

/** A language-model run's metrics.jsonl line. */
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

/** What the language-model task adds to the trainer's result. */
export interface LmResult {
  bestValPerplexity: number;
  model: LanguageModel;
  data: LmData;
}

/**
 * Language modelling: the train split as `batch.streams` parallel streams, one optimiser step per
 * window of `batch.bptt` tokens, the LSTM state carried from window to window (truncated BPTT:
 * gradients stop at the window's start) and reset at each epoch. Validation is perplexity on the
 * valid split; the schedule and the `best` checkpoint follow it.
 */
registerTask<LmRunConfig>({
  name: 'lm',
  // Refused by name: "unknown language-model architecture 'rnn-attn'; known: lstm-lm".
  checkArch: (config) => void getLmArch(config.arch),
  async start(config, { runDir, resuming, log }) {
    const data = await prepareLmData(config, runDir, resuming);
    log(data.summary);
    const model = buildLanguageModel(config.arch, config.archConfig, data.vocab.size, config.head, config.seed);
    return lmTraining(config, model, data);
  },
});

/** Perplexity of a split, state carried across windows as in training. */
export function splitPerplexity(model: LanguageModel, ids: Int32Array, streams: number, bptt: number): Perplexity {
  const scored = scoreStream(model, ids, streams, bptt);
  let nllSum = 0;
  for (const lp of scored.logProbs) nllSum -= lp;
  const nll = nllSum / scored.logProbs.length;
  return { tokens: scored.logProbs.length, nll, perplexity: Math.exp(nll) };
}

function lmTraining(
  config: LmRunConfig,
  model: LanguageModel,
  data: LmData,
): TaskTraining<LmTrainerState, Perplexity, LmEpochMetrics, LmResult> {
  const { streams: B, bptt } = config.batch;
  const train = new TokenStream(data.streams.train, Math.min(B, Math.floor(data.streams.train.length / 2)));
  const windows = train.windowCount(bptt);
  return {
    model,
    newState: { bestValPerplexity: Infinity },
    result: (state) => ({ bestValPerplexity: state.bestValPerplexity, model, data }),
    loop: (optimizer) => ({
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
    }),
  };
}
