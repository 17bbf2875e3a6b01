import { basename } from 'node:path';
import { gzipSync } from 'node:zlib';
import { MODEL_CARD_FILE, modelCardSchema, type ModelCard, type ModelCardInput } from '../core/runtime/model-card.ts';
import { SPECIALS } from '../core/vocab.ts';
import { checkpointSha256, RunFolder, type LoadedCheckpoint } from '../train/run-folder.ts';
import { checkParity, parityRefusal, parityTolerance, type ParityReport } from './parity.ts';
import { checkPrecision, type PrecisionCheck } from './precision-check.ts';
import { convertPrecision, type Precision } from './precision.ts';
import { writeModelDir } from './model-dir.ts';
import { measureSizeReport } from './size-report.ts';
import { exportParts } from './task-parts.ts';
import { type TritonOptions, writeTritonRepository } from './triton.ts';

export interface ExportOptions {
  /** Which checkpoint: the best validation BLEU (default) or the last. */
  checkpoint?: 'best' | 'last';
  /**
   * Export the mean of the last N epoch checkpoints' parameters instead (fairseq's
   * average_checkpoints.py --num-epoch-checkpoints N); `checkpoint` is then not used. The run must
   * keep N or more (`frost train --keep-last`).
   */
  averageLast?: number;
  /** Model name in the card; defaults to the output folder's name. */
  name?: string;
  /** Validation sentences (images, for captioning) used for the parity check. @default 8 */
  paritySentences?: number;
  /** The largest |Δ| / max(1, |value|) the export accepts (export/parity.ts). @default 1e-4 */
  parityTolerance?: number;
  quiet?: boolean;
  /**
   * Store frozen matrices the graph could regenerate (seeded fixed heads, the Hadamard head) as
   * plain initializers instead of regenerating them at session creation. @default false
   */
  storeFrozen?: boolean;
  /**
   * Storage precision of the large weights (export/precision.ts). The float32 graphs are parity-
   * checked against tfjs first; fp16/int8 ones are then compared with them by greedy BLEU on the
   * validation split (export/precision-check.ts) instead of the 1e-4 bar. @default 'fp32'
   */
  precision?: Precision;
  /** Validation sentences for the fp16/int8 BLEU comparison. @default 300 */
  precisionSentences?: number;
  /** Also write a Triton Inference Server model repository here (export/triton.ts). */
  triton?: string;
  tritonOptions?: TritonOptions;
}

export interface ExportResult {
  outDir: string;
  card: ModelCard;
  parity: ParityReport;
  /** Only for fp16/int8 exports. */
  precisionCheck?: PrecisionCheck;
}

/** The checkpoint to export: one saved by the trainer, or the average of the last N epoch checkpoints. */
async function loadSource(
  run: RunFolder,
  opts: ExportOptions,
): Promise<{
  checkpoint: LoadedCheckpoint;
  dir: string;
  averaged?: { epoch: number; dir: string; sha256: string }[];
}> {
  if (opts.averageLast === undefined) {
    const dir = run.findCheckpoint(opts.checkpoint ?? 'best');
    return { checkpoint: await run.loadCheckpoint(dir), dir };
  }
  const { checkpoint, averaged } = await run.averageLast(opts.averageLast);
  const sums = await Promise.all(averaged.map((c) => checkpointSha256(c.dir)));
  return {
    checkpoint,
    // Named in errors about the averaged tensors: the newest of them.
    dir: averaged[averaged.length - 1]!.dir,
    averaged: averaged.map((c, i) => ({ ...c, sha256: sums[i]! })),
  };
}

/**
 * Exports a training run to an encoder graph, a decoder-step graph and a model card. It refuses to
 * finish (and writes nothing) unless onnxruntime reproduces the tfjs log-probabilities; the folder is
 * then replaced whole, the previous model kept until the new one is on disk (model-dir.ts).
 * What differs by task (vocabularies, parity inputs, card fields, a frozen image encoder merged
 * into the encoder graph) comes from task-parts.ts.
 */
export async function exportRun(runDir: string, outDir: string, opts: ExportOptions = {}): Promise<ExportResult> {
  const run = await RunFolder.open(runDir);
  const { config } = run;
  const source = await loadSource(run, opts);
  const { checkpoint, dir: ckptDir } = source;
  const parts = await exportParts(run);

  const model = run.rebuildModel(parts.sizes, checkpoint, ckptDir);
  const storeFrozen = opts.storeFrozen ?? false;
  const { encoder, decoder, graphs } = model.toOnnx({ storeFrozen, encoderOpset: parts.encoderOpset });
  const modelEncoderBytes = encoder.toBytes();
  const finished = parts.finishEncoder?.(modelEncoderBytes);
  const encoderBytes = finished?.bytes ?? modelEncoderBytes;
  if (finished) graphs.encoder.inputs = finished.inputs;
  const decoderBytes = decoder.toBytes();

  const samples = await parts.parityInputs(opts.paritySentences ?? 8, SPECIALS.pad.id);
  // Said even when quiet: the card claims a parity check, and this one ran on made-up inputs.
  if (samples.synthetic !== undefined) {
    process.stderr.write(
      `warning: the parity check runs on synthetic inputs (seeded random), because ${samples.synthetic}; the card records it\n`,
    );
  }
  const tolerance = parityTolerance(opts.parityTolerance);
  const parity = await checkParity(model, encoderBytes, decoderBytes, samples, SPECIALS.bos.id, SPECIALS.pad.id);
  const refusal = parityRefusal(parity, tolerance);
  if (refusal !== null) {
    model.params.dispose();
    throw new Error(refusal);
  }

  // Reduced precision is a pass over the checked float32 bytes; its drift from tfjs is recorded, not held to the
  // tolerance.
  const precision = opts.precision ?? 'fp32';
  const encoderOut = convertPrecision(encoderBytes, precision);
  const decoderOut = convertPrecision(decoderBytes, precision);
  const final = { encoder: encoderOut.bytes, decoder: decoderOut.bytes };
  let drift = parity;
  if (precision !== 'fp32') {
    drift = await checkParity(model, final.encoder, final.decoder, samples, SPECIALS.bos.id, SPECIALS.pad.id);
    if (!Number.isFinite(drift.maxAbsDiff)) {
      model.params.dispose();
      throw new Error(
        `export refused: the ${precision} graphs produce non-finite log-probabilities (a weight out of ${precision} range?)`,
      );
    }
  }
  const size = await measureSizeReport({ [graphs.encoder.file]: final.encoder, [graphs.decoder.file]: final.decoder });

  const extraFiles = parts.files ?? {};
  const counts = model.params.counts();
  const state = checkpoint.state as { bestBleu?: number; step?: number; epoch?: number };
  const input: ModelCardInput = {
    format: 'frost-model',
    version: 1,
    name: opts.name ?? basename(outDir),
    task: parts.card.task,
    arch: config.arch,
    preset: config.preset,
    head: model.head.describe(),
    ...(parts.card.source ? { source: parts.card.source } : {}),
    target: parts.card.target,
    ...(parts.card.image ? { image: parts.card.image } : {}),
    specials: { pad: SPECIALS.pad.id, unk: SPECIALS.unk.id, bos: SPECIALS.bos.id, eos: SPECIALS.eos.id },
    tokenizer: parts.card.tokenizer,
    ...(parts.card.subword ? { subword: parts.card.subword } : {}),
    graphs,
    params: {
      learnable: counts.learnable,
      frozen: counts.frozen,
      generated: model.head.generatedParams?.(storeFrozen) ?? 0,
      byComponent: model.params.countsByComponent(),
    },
    files: {
      [graphs.encoder.file]: { bytes: final.encoder.length, gzipBytes: gzipSync(final.encoder).length },
      [graphs.decoder.file]: { bytes: final.decoder.length, gzipBytes: gzipSync(final.decoder).length },
      ...Object.fromEntries(
        Object.entries(extraFiles).map(([file, bytes]) => [
          file,
          { bytes: bytes.length, gzipBytes: gzipSync(bytes).length },
        ]),
      ),
    },
    precision,
    size,
    config: {
      archConfig: config.archConfig,
      seed: config.seed,
      data: parts.card.data,
      ...parts.card.extra,
      checkpoint: {
        ...(source.averaged
          ? {
              which: `average-last-${source.averaged.length}`,
              step: state.step,
              epoch: state.epoch,
              averaged: source.averaged.map((c) => ({ epoch: c.epoch, dir: basename(c.dir), sha256: c.sha256 })),
            }
          : { which: basename(ckptDir), step: state.step, epoch: state.epoch }),
        // The weights exported are the run's moving average (train/optim/parameter-average.ts).
        ...(config.emaDecay === undefined ? {} : { emaDecay: config.emaDecay }),
      },
      parity: {
        maxAbsDiff: parity.maxAbsDiff,
        maxScaledDiff: parity.maxScaledDiff,
        maxNormError: parity.maxNormError,
        maxReferenceNormError: parity.maxReferenceNormError,
        tolerance,
        sentences: parity.sentences,
        inputs: samples.synthetic === undefined ? 'validation' : 'synthetic',
        ...(samples.synthetic === undefined ? {} : { syntheticBecause: samples.synthetic }),
      },
      initializerBytes: { encoder: encoder.initializerBytesByScope(), decoder: decoder.initializerBytesByScope() },
    },
    // An average was never validated as such: the run's best BLEU belongs to another model.
    metrics: !source.averaged && Number.isFinite(state.bestBleu) ? { valBleu: state.bestBleu as number } : {},
    created: new Date().toISOString(),
  };
  let card = modelCardSchema.parse(input);
  let precisionCheck: PrecisionCheck | undefined;
  if (precision !== 'fp32') {
    precisionCheck = await checkPrecision({
      card,
      precision,
      fp32: { encoder: encoderBytes, decoder: decoderBytes },
      converted: final,
      pairs: await parts.precisionPairs(opts.precisionSentences),
      convertedWeights: encoderOut.converted.length + decoderOut.converted.length,
      maxAbsLogProbDiff: drift.maxAbsDiff,
      files: async (file) => {
        const bytes = extraFiles[file];
        if (bytes === undefined) throw new Error('not among the exported files');
        return bytes;
      },
    });
    card = modelCardSchema.parse({ ...input, precisionCheck });
  }
  model.params.dispose();
  const recovered = await writeModelDir(outDir, {
    [graphs.encoder.file]: final.encoder,
    [graphs.decoder.file]: final.decoder,
    ...extraFiles,
    [MODEL_CARD_FILE]: `${JSON.stringify(card, null, 1)}\n`,
  });
  if (!opts.quiet) for (const line of recovered) process.stderr.write(`${line} (left by an interrupted export)\n`);
  if (opts.triton !== undefined) await writeTritonRepository(opts.triton, card, final, opts.tritonOptions);
  if (!opts.quiet) {
    const check =
      precisionCheck?.bleuDelta === undefined
        ? ''
        : `, ${precision} validation BLEU ${precisionCheck.bleu!.toFixed(2)} (fp32 ${precisionCheck.bleuFp32!.toFixed(2)}, Δ ${precisionCheck.bleuDelta.toFixed(2)})`;
    process.stderr.write(
      `exported ${runDir} -> ${outDir}: ${card.params.learnable} learnable parameters, ` +
        `${final.encoder.length + final.decoder.length} bytes of ${precision} ONNX, parity max |Δ| ${parity.maxAbsDiff.toExponential(2)}${check}\n`,
    );
  }
  return { outDir, card, parity, ...(precisionCheck ? { precisionCheck } : {}) };
}
