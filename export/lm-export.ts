import * as tf from '@tensorflow/tfjs-core';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as ort from 'onnxruntime-node';
import { lmCardSchema, type LmCard, type LmCardInput } from '../core/runtime/lm-card.ts';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import { createNodeSession } from '../core/runtime/ort-node.ts';
import { SPECIALS } from '../core/vocab.ts';
import type { LanguageModel, LmState } from '../models/index.ts';
import { prepareLmData } from '../train/lm/lm-data.ts';
import { checkpointSha256, RunFolder } from '../train/run-folder.ts';
import { compareStep, PARITY_TOLERANCE, parityRefusal, type ParityReport } from './parity.ts';

export const LM_STEP_FILE = 'step.onnx';

export interface LmExportOptions {
  checkpoint?: 'best' | 'last';
  /**
   * Export the mean of the last N epoch checkpoints (`frost train --keep-last`) instead of
   * `checkpoint`; refused, naming the run, when it keeps fewer.
   */
  averageLast?: number;
  name?: string;
  /** Streams and steps of the validation split run through both for the parity check. @default 4 × 24 */
  parityStreams?: number;
  paritySteps?: number;
  storeFrozen?: boolean;
  quiet?: boolean;
}

export interface LmExportResult {
  outDir: string;
  card: LmCard;
  parity: ParityReport;
}

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
 * Exports a language-model run: the step graph (models/lm/ toOnnx) and its card (lm-card.ts),
 * refused unless onnxruntime reproduces tfjs's log-probabilities on the validation stream within
 * 1e-4 (scaled, as for seq2seq exports).
 */
export async function exportLmRun(runDir: string, outDir: string, opts: LmExportOptions = {}): Promise<LmExportResult> {
  const run = await RunFolder.openTask(runDir, 'lm');
  const { config } = run;
  const data = await prepareLmData(config, runDir, true);
  const averaged = opts.averageLast === undefined ? undefined : await run.averageLast(opts.averageLast);
  // Errors about averaged tensors name the newest of the averaged checkpoints.
  const ckptDir = averaged ? averaged.averaged.at(-1)!.dir : run.findCheckpoint(opts.checkpoint ?? 'best');
  const checkpoint = averaged ? averaged.checkpoint : await run.loadCheckpoint(ckptDir);
  const model = run.rebuildLanguageModel(data.vocab.size, checkpoint, ckptDir);
  try {
    const storeFrozen = opts.storeFrozen ?? false;
    const graph = model.toOnnx({ storeFrozen });
    const bytes = graph.toBytes();
    const parity = await checkLmParity(
      model,
      bytes,
      data.streams.valid,
      opts.parityStreams ?? 4,
      opts.paritySteps ?? 24,
    );
    const refusal = parityRefusal(parity, PARITY_TOLERANCE);
    if (refusal !== null) throw new Error(refusal);
    const subwords = await run.subwords([config.lang]);
    const extra = subwords?.files ?? {};
    await mkdir(outDir, { recursive: true });
    await rm(join(outDir, MODEL_CARD_FILE), { force: true });
    await writeFile(join(outDir, LM_STEP_FILE), bytes);
    for (const [file, b] of Object.entries(extra)) await writeFile(join(outDir, file), b);
    const counts = model.params.counts();
    const state = checkpoint.state as { bestValPerplexity?: number; step?: number; epoch?: number };
    const input: LmCardInput = {
      format: 'frost-model',
      version: 1,
      name: opts.name ?? basename(outDir),
      task: 'lm',
      arch: config.arch,
      preset: config.preset,
      head: model.head.describe(),
      target: { lang: config.lang, tokens: [...data.vocab.tokens] },
      specials: { pad: SPECIALS.pad.id, unk: SPECIALS.unk.id, bos: SPECIALS.bos.id, eos: SPECIALS.eos.id },
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
      params: {
        learnable: counts.learnable,
        frozen: counts.frozen,
        generated: model.head.generatedParams?.(storeFrozen) ?? 0,
        byComponent: model.params.countsByComponent(),
      },
      files: Object.fromEntries(
        Object.entries({ [LM_STEP_FILE]: bytes, ...extra }).map(([file, b]) => [
          file,
          { bytes: b.length, gzipBytes: gzipSync(b).length },
        ]),
      ),
      config: {
        archConfig: config.archConfig,
        seed: config.seed,
        data: { dir: config.data.dir ?? 'default (multi30k en + flickr8k)' },
        checkpoint: averaged
          ? {
              which: `average-last-${averaged.averaged.length}`,
              step: state.step,
              epoch: state.epoch,
              averaged: await Promise.all(
                averaged.averaged.map(async (c) => ({
                  epoch: c.epoch,
                  dir: basename(c.dir),
                  sha256: await checkpointSha256(c.dir),
                })),
              ),
            }
          : { which: basename(ckptDir), step: state.step, epoch: state.epoch },
        parity: {
          maxAbsDiff: parity.maxAbsDiff,
          maxScaledDiff: parity.maxScaledDiff,
          maxNormError: parity.maxNormError,
          maxReferenceNormError: parity.maxReferenceNormError,
          streams: parity.sentences,
          steps: parity.steps,
        },
      },
      // An average was never validated: no perplexity is claimed for it.
      metrics:
        !averaged && Number.isFinite(state.bestValPerplexity)
          ? { valPerplexity: state.bestValPerplexity as number }
          : {},
      created: new Date().toISOString(),
    };
    const card = lmCardSchema.parse(input);
    await writeFile(join(outDir, MODEL_CARD_FILE), `${JSON.stringify(card, null, 1)}\n`);
    if (!opts.quiet)
      process.stderr.write(
        `exported ${runDir} -> ${outDir}: ${card.params.learnable} learnable parameters, ${bytes.length} bytes of ONNX, parity max |Δ| ${parity.maxAbsDiff.toExponential(2)}\n`,
      );
    return { outDir, card, parity };
  } finally {
    model.params.dispose();
  }
}
