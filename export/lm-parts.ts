import * as tf from '@tensorflow/tfjs-core';
import { lmCardSchema, type LmCard, type LmCardInput } from '../core/runtime/lm-card.ts';
import { createNodeSession, ort } from '../core/runtime/ort-node.ts';
import type { LanguageModel, LmState } from '../models/index.ts';
import { prepareLmData } from '../train/lm/lm-data.ts';
import type { LmRunConfig } from '../train/run-config.ts';
import { compareStep, PARITY_TOLERANCE, parityRefusal, type ParityReport } from './parity.ts';
import { checkpointCard, fileSizes, paramCounts, specials } from './card-fields.ts';
import { registerTaskExport, type TaskExport } from './task-parts.ts';

export const LM_STEP_FILE = 'step.onnx';

/**
 * Runs `streams` rows of the validation stream through the tfjs model and the step graph in
 * onnxruntime, `steps` tokens each with the state carried, and compares every log-probability.
 */
export async function checkLmParity(
  model: LanguageModel,
  stepBytes: Uint8Array,
  tokens: Int32Array,
  streams: number,
  steps: number,
): Promise<ParityReport> {
  const session = await createNodeSession(stepBytes);
  const B = Math.max(1, Math.min(streams, Math.floor(tokens.length / Math.max(1, steps))));
  const T = Math.min(steps, Math.floor(tokens.length / B));
  const H = model.stateSize;
  let tfState: LmState = model.initialState(B);
  let ortState: Record<string, ort.Tensor> = Object.fromEntries(
    model.stateNames.map((n) => [n, new ort.Tensor('float32', new Float32Array(B * H), [B, H])]),
  );
  const report: ParityReport = { sentences: B, steps: T, maxAbsDiff: 0, maxScaledDiff: 0, worst: null };
  for (let t = 0; t < T; t++) {
    const ids = Int32Array.from({ length: B }, (_, b) => tokens[b * T + t]);
    const out = model.step(tf.tensor1d(ids, 'int32'), tfState);
    tf.dispose(Object.values(tfState));
    tfState = out.state;
    const expected = out.logProbs.dataSync() as Float32Array;
    out.logProbs.dispose();
    const run = await session.run({
      token: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [B]),
      ...ortState,
    });
    ortState = Object.fromEntries(model.stateNames.map((n) => [n, run[`next_${n}`]]));
    const got = run.log_probs.data as Float32Array;
    compareStep(report, t, expected, got, expected.length / B, () => true);
  }
  tf.dispose(Object.values(tfState));
  await session.release();
  return report;
}

/**
 * The export of a language-model run: the step graph (models/archs/lstm-lm.ts toOnnx) and its card
 * (lm-card.ts), refused unless onnxruntime reproduces tfjs's log-probabilities on the validation
 * stream within 1e-4 (scaled, as for seq2seq exports). fp32 only, and no Triton repository, for now.
 */
export const lmExport: TaskExport<LmCard> = {
  refuse(opts) {
    const precision = opts.precision ?? 'fp32';
    if (precision !== 'fp32') throw new Error(`--precision ${precision}: language models export in fp32 only for now`);
    if (opts.triton !== undefined) throw new Error('--triton: not available for language models yet');
  },
  async build(run, source, opts, name) {
    const config = run.config as LmRunConfig;
    const data = await prepareLmData(config, run.dir, true);
    const model = run.rebuildLanguageModel(data.vocab.size, source.checkpoint, source.dir);
    try {
      const storeFrozen = opts.storeFrozen ?? false;
      const bytes = model.toOnnx({ storeFrozen }).toBytes();
      const parity = await checkLmParity(
        model,
        bytes,
        data.streams.valid,
        opts.parityStreams ?? 4,
        opts.paritySteps ?? 24,
      );
      // The bar is the default one: `--parity-tolerance` is read by seq2seq exports only.
      const refusal = parityRefusal(parity, PARITY_TOLERANCE);
      if (refusal !== null) throw new Error(refusal);
      const subwords = await run.subwords([config.lang]);
      const files = { [LM_STEP_FILE]: bytes, ...(subwords?.files ?? {}) };
      const state = source.checkpoint.state as { bestValPerplexity?: number };
      const input: LmCardInput = {
        format: 'frost-model',
        version: 1,
        name,
        task: 'lm',
        arch: config.arch,
        preset: config.preset,
        head: model.head.describe(),
        target: { lang: config.lang, tokens: [...data.vocab.tokens] },
        specials,
        tokenizer: config.tokenizer,
        ...(subwords ? { subword: subwords.spec } : {}),
        graphs: {
          step: {
            file: LM_STEP_FILE,
            token: 'token',
            state: [...model.stateNames],
            stateSize: model.stateSize,
            logProbs: 'log_probs',
          },
        },
        params: paramCounts(model, storeFrozen),
        files: fileSizes(files),
        config: {
          archConfig: config.archConfig,
          seed: config.seed,
          data: { dir: config.data.dir ?? 'default (multi30k en + flickr8k)' },
          checkpoint: checkpointCard(source),
          parity: {
            maxAbsDiff: parity.maxAbsDiff,
            maxScaledDiff: parity.maxScaledDiff,
            maxNormError: parity.maxNormError,
            maxReferenceNormError: parity.maxReferenceNormError,
            streams: parity.sentences,
            steps: parity.steps,
          },
        },
        // The best perplexity belongs to the best checkpoint's weights: not to a later `last`, nor to an average.
        metrics:
          source.validated && Number.isFinite(state.bestValPerplexity)
            ? { valPerplexity: state.bestValPerplexity as number }
            : {},
        created: new Date().toISOString(),
      };
      return { files, card: lmCardSchema.parse(input), parity, describe: `${bytes.length} bytes of ONNX` };
    } finally {
      model.params.dispose();
    }
  },
};

registerTaskExport('lm', lmExport);
