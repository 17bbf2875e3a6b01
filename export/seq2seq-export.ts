import { modelCardSchema, type ModelCard, type ModelCardInput } from '../core/runtime/model-card.ts';
import { SPECIALS } from '../core/vocab.ts';
import type { ExportOptions } from './export-run.ts';
import { checkParity, parityRefusal, parityTolerance } from './parity.ts';
import { checkPrecision } from './precision-check.ts';
import { convertPrecision } from './precision.ts';
import { measureSizeReport } from './size-report.ts';
import { checkpointCard, fileSizes, paramCounts, specials } from './card-fields.ts';
import type { BuiltExport, ExportParts, ExportSource, TaskExport } from './task-parts.ts';
import { writeTritonRepository } from './triton.ts';
import type { RunFolder } from '../train/run-folder.ts';
import type { OnnxGraphOptions } from '../models/archs/types.ts';

/**
 * How a step graph is built for its consumer: frost's runtime (`append`) writes new cache positions itself and
 * feeds one memory row per source; Triton and the Hugging Face layout (`concat`) feed whole caches back and one
 * memory row per step row.
 */
export function stepGraphForm(
  decoderCache: 'concat' | 'append',
): Required<Pick<OnnxGraphOptions, 'decoderCache' | 'groupedMemory'>> {
  return { decoderCache, groupedMemory: decoderCache === 'append' };
}

/**
 * The export of an encoder-decoder run (translation, captioning): an encoder graph and a decoder-step
 * graph, parity-checked against tfjs, then optionally stored in fp16/int8 (checked by validation BLEU)
 * and written as a Triton repository too. What differs between its tasks (vocabularies, parity inputs,
 * card fields, a frozen image encoder merged into the encoder graph) is the task's `ExportParts`.
 */
export function seq2seqExport(partsOf: (run: never) => Promise<ExportParts>): TaskExport<ModelCard> {
  return {
    async build(run, source, opts, name) {
      const parts = await (partsOf as (run: RunFolder) => Promise<ExportParts>)(run);
      const model = run.rebuildModel(parts.sizes, source.checkpoint, source.dir);
      try {
        return await buildSeq2Seq(run, source, opts, name, parts, model);
      } finally {
        model.params.dispose();
      }
    },
  };
}

async function buildSeq2Seq(
  run: RunFolder,
  source: ExportSource,
  opts: ExportOptions,
  name: string,
  parts: ExportParts,
  model: ReturnType<RunFolder['rebuildModel']>,
): Promise<BuiltExport<ModelCard>> {
  const { config } = run;
  const { checkpoint } = source;
  const storeFrozen = opts.storeFrozen ?? false;
  // Triton runs the step graph itself and feeds next_<state> back (export/triton.ts), so it keeps the Concat form.
  const decoderCache = opts.triton === undefined ? (opts.decoderCache ?? 'append') : 'concat';
  const { encoder, decoder, graphs } = model.toOnnx({
    storeFrozen,
    encoderOpset: parts.encoderOpset,
    ...stepGraphForm(decoderCache),
  });
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
  const parity = await checkParity(
    model,
    encoderBytes,
    decoderBytes,
    samples,
    SPECIALS.bos.id,
    SPECIALS.pad.id,
    graphs.decoder.cache,
  );
  const refusal = parityRefusal(parity, tolerance);
  if (refusal !== null) throw new Error(refusal);

  // Reduced precision is a pass over the checked float32 bytes; its drift from tfjs is recorded, not held to the
  // tolerance.
  const precision = opts.precision ?? 'fp32';
  const encoderOut = convertPrecision(encoderBytes, precision);
  const decoderOut = convertPrecision(decoderBytes, precision);
  const final = { encoder: encoderOut.bytes, decoder: decoderOut.bytes };
  let drift = parity;
  if (precision !== 'fp32') {
    drift = await checkParity(
      model,
      final.encoder,
      final.decoder,
      samples,
      SPECIALS.bos.id,
      SPECIALS.pad.id,
      graphs.decoder.cache,
    );
    if (!Number.isFinite(drift.maxAbsDiff)) {
      throw new Error(
        `export refused: the ${precision} graphs produce non-finite log-probabilities (a weight out of ${precision} range?)`,
      );
    }
  }
  const size = await measureSizeReport({ [graphs.encoder.file]: final.encoder, [graphs.decoder.file]: final.decoder });

  const extraFiles = parts.files ?? {};
  const files = { [graphs.encoder.file]: final.encoder, [graphs.decoder.file]: final.decoder, ...extraFiles };
  const state = checkpoint.state as { bestBleu?: number; step?: number; epoch?: number };
  const input: ModelCardInput = {
    format: 'frost-model',
    version: 1,
    name,
    task: parts.card.task,
    arch: config.arch,
    preset: config.preset,
    head: model.head.describe(),
    ...(parts.card.source ? { source: parts.card.source } : {}),
    target: parts.card.target,
    ...(parts.card.image ? { image: parts.card.image } : {}),
    specials,
    tokenizer: parts.card.tokenizer,
    ...(parts.card.subword ? { subword: parts.card.subword } : {}),
    graphs,
    params: paramCounts(model, storeFrozen),
    files: fileSizes(files),
    precision,
    size,
    config: {
      archConfig: config.archConfig,
      seed: config.seed,
      data: parts.card.data,
      ...parts.card.extra,
      checkpoint: {
        ...checkpointCard(source),
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
  // The Triton repository is written from the card, once it is in the output folder.
  const triton = (card: ModelCard) =>
    opts.triton === undefined
      ? {}
      : { finish: () => writeTritonRepository(opts.triton!, card, final, opts.tritonOptions) };
  let card = modelCardSchema.parse(input);
  if (precision === 'fp32') return { files, card, parity, describe: describe(final, precision), ...triton(card) };
  const precisionCheck = await checkPrecision({
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
  const check =
    precisionCheck.bleuDelta === undefined
      ? ''
      : `, ${precision} validation BLEU ${precisionCheck.bleu!.toFixed(2)} (fp32 ${precisionCheck.bleuFp32!.toFixed(2)}, Δ ${precisionCheck.bleuDelta.toFixed(2)})`;
  return {
    files,
    card,
    parity,
    precisionCheck,
    describe: describe(final, precision),
    note: check,
    ...triton(card),
  };
}

/** `N bytes of fp32 ONNX` for the summary line. */
function describe(final: { encoder: Uint8Array; decoder: Uint8Array }, precision: string): string {
  return `${final.encoder.length + final.decoder.length} bytes of ${precision} ONNX`;
}
