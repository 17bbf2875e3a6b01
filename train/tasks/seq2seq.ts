import * as tf from '@tensorflow/tfjs-core';
import { buildModel, getArch, type Seq2SeqModel } from '../../models/index.ts';
import { checkOutputRows, outputRows } from '../output-support.ts';
import type { RunConfig } from '../run-config.ts';
import type { LoopState } from '../training-loop.ts';
import type { Seq2SeqTaskSpec, TaskData, TaskTraining, TrainingTask, ValidationScores } from './types.ts';

/** What a seq2seq run remembers between sessions; saved with every checkpoint. */
interface Seq2SeqState extends LoopState {
  bestBleu: number;
  /** Rows of the output layer (train/output-support.ts `outputRows`); absent in checkpoints from before. */
  outputRows?: number;
}

/** A seq2seq run's metrics.jsonl line. */
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

/** What a seq2seq task adds to the trainer's result. */
export interface Seq2SeqResult {
  bestBleu: number;
  model: Seq2SeqModel;
  data: TaskData;
}

/** A task's validation: its score alone, or its score and others by name. */
type Validation = number | ValidationScores;

/**
 * A seq2seq task (translation, captioning) from its data: the model of the run's architecture,
 * one update per batch (label-smoothed when the run smooths), validation BLEU and its metrics line.
 */
export function seq2seqTask<Config extends RunConfig>(spec: Seq2SeqTaskSpec<Config>): TrainingTask<Config> {
  return {
    name: spec.name,
    checkArch: (config) => checkArchKind(config, spec),
    async start(config, { runDir, resuming, checkpoint, log }) {
      const data = await spec.prepare(config, runDir, resuming, log);
      log(data.summary);
      const model = buildModel(config.arch, config.archConfig, data.sizes, config.head, config.seed);
      if (checkpoint) {
        try {
          checkOutputRows(checkpoint.state, outputRows(model.head, data.sizes.tgtVocab), data.sizes.tgtVocab, runDir);
        } catch (err) {
          model.params.dispose();
          throw err;
        }
      }
      return seq2seqTraining(config, model, data);
    },
  };
}

function seq2seqTraining(
  config: RunConfig,
  model: Seq2SeqModel,
  data: TaskData,
): TaskTraining<Seq2SeqState, Validation, EpochMetrics, Seq2SeqResult> {
  const smoothing = config.labelSmoothing;
  let nllSum = 0;
  const lossOptions = { labelSmoothing: smoothing, onNll: (v: number) => (nllSum += v) };
  return {
    model,
    newState: { bestBleu: -Infinity, outputRows: outputRows(model.head, data.sizes.tgtVocab) },
    result: (state) => ({ bestBleu: state.bestBleu, model, data }),
    loop: (optimizer) => ({
      unit: 'batch',
      plan: (epoch) => {
        const batches = data.epoch(epoch);
        // The epoch's NLL, summed by lossOptions.onNll, for label-smoothed runs' metrics.
        nllSum = 0;
        return {
          length: batches.length,
          train: (i) => {
            const batch = batches.batch(i);
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
    }),
  };
}

function bleuOf(validation: Validation): number {
  return typeof validation === 'number' ? validation : validation.score;
}

/** Refuses an architecture that encodes another input than the task feeds (images or token ids). */
function checkArchKind(config: RunConfig, spec: Seq2SeqTaskSpec<never>): void {
  const archKind = getArch(config.arch).inputKind;
  if (archKind !== spec.inputKind) {
    const what = (kind: string) => (kind === 'image' ? 'images' : 'token ids');
    throw new Error(
      `architecture '${config.arch}' encodes ${what(archKind)}; a ${config.task} run needs one that encodes ${what(spec.inputKind)}`,
    );
  }
}

/** `, chrF2 51.20, chrF2++ 49.80` for the epoch line. */
function formatScores(scores: Record<string, number> | undefined): string {
  return scores
    ? Object.entries(scores)
        .map(([name, value]) => `, ${name} ${value.toFixed(2)}`)
        .join('')
    : '';
}
