import type { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { modelCardSchema, type ModelCard, type ModelCardInput } from '../core/runtime/model-card.ts';
import { SPECIALS } from '../core/vocab.ts';
import type { ExportOptions } from './export-run.ts';
import { checkParity, parityRefusal, parityTolerance, type ParityInputs, type ParityReport } from './parity.ts';
import { checkPrecision, type GraphBytes, type PrecisionCheck } from './precision-check.ts';
import { convertPrecision, type Precision } from './precision.ts';
import { measureSizeReport } from './size-report.ts';
import { checkpointCard, fileSizes, paramCounts, specials } from './card-fields.ts';
import type { BuiltExport, ExportParts, ExportSource, TaskExport } from './task-parts.ts';
import { writeTritonRepository } from './triton.ts';
import type { RunFolder } from '../train/run-folder.ts';
import type { OnnxGraphOptions, Seq2SeqModel } from '../models/archs/types.ts';

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
        return await buildSeq2Seq({ run, source, opts, name, parts, model });
      } finally {
        model.params.dispose();
      }
    },
  };
}

/** One export as it is built: what each stage below reads. */
interface Seq2SeqBuild {
  run: RunFolder;
  source: ExportSource;
  opts: ExportOptions;
  name: string;
  parts: ExportParts;
  model: Seq2SeqModel;
}

/**
 * The stages in order: the fp32 graphs, their parity with tfjs (the export's bar), the stored precision, the
 * card, and for fp16/int8 the BLEU comparison, which the card then records; a Triton repository last, from the
 * card as written.
 */
async function buildSeq2Seq(build: Seq2SeqBuild): Promise<BuiltExport<ModelCard>> {
  const emitted = emitGraphs(build);
  const checked = await checkFp32Parity(build, emitted);
  const stored = await storePrecision(build, emitted, checked);
  const { graphs } = emitted;
  const files = {
    [graphs.encoder.file]: stored.bytes.encoder,
    [graphs.decoder.file]: stored.bytes.decoder,
    ...build.parts.files,
  };
  const input = await cardInput(build, emitted, checked, stored, files);
  const { precision } = stored;
  if (precision === 'fp32') {
    const card = modelCardSchema.parse(input);
    return { files, card, parity: checked.parity, describe: describe(stored), ...triton(build.opts, card, stored) };
  }
  const precisionCheck = await comparePrecision(build, emitted, stored, modelCardSchema.parse(input));
  const card = modelCardSchema.parse({ ...input, precisionCheck });
  return {
    files,
    card,
    parity: checked.parity,
    precisionCheck,
    describe: describe(stored),
    note: precisionNote(precision, precisionCheck),
    ...triton(build.opts, card, stored),
  };
}

/** The model's fp32 graphs, the encoder as the task finishes it (a frozen image encoder merged in front). */
interface EmittedGraphs {
  /** The builders, whose initializer bytes by scope the card records. */
  builders: { encoder: GraphBuilder; decoder: GraphBuilder };
  graphs: ModelCard['graphs'];
  bytes: GraphBytes;
}

function emitGraphs({ model, parts, opts }: Seq2SeqBuild): EmittedGraphs {
  // Triton runs the step graph itself and feeds next_<state> back (export/triton.ts), so it keeps the Concat form.
  const decoderCache = opts.triton === undefined ? (opts.decoderCache ?? 'append') : 'concat';
  const { encoder, decoder, graphs } = model.toOnnx({
    storeFrozen: opts.storeFrozen ?? false,
    encoderOpset: parts.encoderOpset,
    ...stepGraphForm(decoderCache),
  });
  const modelEncoderBytes = encoder.toBytes();
  const finished = parts.finishEncoder?.(modelEncoderBytes);
  if (finished) graphs.encoder.inputs = finished.inputs;
  return {
    builders: { encoder, decoder },
    graphs,
    bytes: { encoder: finished?.bytes ?? modelEncoderBytes, decoder: decoder.toBytes() },
  };
}

/** The fp32 graphs' parity with tfjs, which passed the tolerance, and the inputs it ran. */
interface CheckedParity {
  samples: ParityInputs;
  tolerance: number;
  parity: ParityReport;
}

/** Runs the parity check on the task's inputs and refuses the export when it fails the tolerance. */
async function checkFp32Parity({ model, parts, opts }: Seq2SeqBuild, emitted: EmittedGraphs): Promise<CheckedParity> {
  const samples = await parts.parityInputs(opts.paritySentences ?? 8, SPECIALS.pad.id);
  // Said even when quiet: the card claims a parity check, and this one ran on made-up inputs.
  if (samples.synthetic !== undefined) {
    process.stderr.write(
      `warning: the parity check runs on synthetic inputs (seeded random), because ${samples.synthetic}; the card records it\n`,
    );
  }
  const tolerance = parityTolerance(opts.parityTolerance);
  const parity = await parityOf(model, emitted.bytes, samples, emitted.graphs);
  const refusal = parityRefusal(parity, tolerance);
  if (refusal !== null) throw new Error(refusal);
  return { samples, tolerance, parity };
}

function parityOf(
  model: Seq2SeqModel,
  bytes: GraphBytes,
  samples: ParityInputs,
  graphs: ModelCard['graphs'],
): Promise<ParityReport> {
  return checkParity(
    model,
    bytes.encoder,
    bytes.decoder,
    samples,
    SPECIALS.bos.id,
    SPECIALS.pad.id,
    graphs.decoder.cache,
  );
}

/** The graphs in the precision they are stored in, and their drift from tfjs. */
interface StoredGraphs {
  precision: Precision;
  bytes: GraphBytes;
  /** Weights the conversion stored in fp16/int8, both graphs. */
  convertedWeights: number;
  /** The fp32 parity itself when nothing was converted. */
  drift: ParityReport;
}

/**
 * Reduced precision is a pass over the checked float32 bytes; its drift from tfjs is recorded, not held to the
 * tolerance, but non-finite log-probabilities are refused.
 */
async function storePrecision(
  { model, opts }: Seq2SeqBuild,
  emitted: EmittedGraphs,
  checked: CheckedParity,
): Promise<StoredGraphs> {
  const precision = opts.precision ?? 'fp32';
  const encoderOut = convertPrecision(emitted.bytes.encoder, precision);
  const decoderOut = convertPrecision(emitted.bytes.decoder, precision);
  const bytes = { encoder: encoderOut.bytes, decoder: decoderOut.bytes };
  const convertedWeights = encoderOut.converted.length + decoderOut.converted.length;
  if (precision === 'fp32') return { precision, bytes, convertedWeights, drift: checked.parity };
  const drift = await parityOf(model, bytes, checked.samples, emitted.graphs);
  if (!Number.isFinite(drift.maxAbsDiff)) {
    throw new Error(
      `export refused: the ${precision} graphs produce non-finite log-probabilities (a weight out of ${precision} range?)`,
    );
  }
  return { precision, bytes, convertedWeights, drift };
}

/** The card of the stored graphs, before any precision check: the task's fields, the run's, the parity's. */
async function cardInput(
  { run, source, opts, name, parts, model }: Seq2SeqBuild,
  emitted: EmittedGraphs,
  checked: CheckedParity,
  { precision, bytes }: StoredGraphs,
  files: Record<string, Uint8Array>,
): Promise<ModelCardInput> {
  const { config } = run;
  const { graphs, builders } = emitted;
  const { samples, tolerance, parity } = checked;
  const storeFrozen = opts.storeFrozen ?? false;
  const size = await measureSizeReport({ [graphs.encoder.file]: bytes.encoder, [graphs.decoder.file]: bytes.decoder });
  const state = source.checkpoint.state as { bestBleu?: number; step?: number; epoch?: number };
  return {
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
    ...(parts.card.marian ? { marian: parts.card.marian } : {}),
    ...(parts.card.fairseq ? { fairseq: parts.card.fairseq } : {}),
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
      initializerBytes: {
        encoder: builders.encoder.initializerBytesByScope(),
        decoder: builders.decoder.initializerBytesByScope(),
      },
    },
    // The run's best BLEU belongs to the best checkpoint's weights: not to a later `last`, nor to an average.
    metrics: source.validated && Number.isFinite(state.bestBleu) ? { valBleu: state.bestBleu as number } : {},
    created: new Date().toISOString(),
  };
}

/** The fp16/int8 graphs against the fp32 ones: greedy validation BLEU where the task has pairs, and the drift. */
async function comparePrecision(
  { parts, opts }: Seq2SeqBuild,
  emitted: EmittedGraphs,
  stored: StoredGraphs,
  card: ModelCard,
): Promise<PrecisionCheck> {
  const extraFiles = parts.files ?? {};
  return checkPrecision({
    card,
    precision: stored.precision,
    fp32: emitted.bytes,
    converted: stored.bytes,
    pairs: await parts.precisionPairs(opts.precisionSentences),
    convertedWeights: stored.convertedWeights,
    maxAbsLogProbDiff: stored.drift.maxAbsDiff,
    files: async (file) => {
      const bytes = extraFiles[file];
      if (bytes === undefined) throw new Error('not among the exported files');
      return bytes;
    },
  });
}

/** What the summary line says after the parity: the fp16/int8 validation BLEU, when there was one. */
function precisionNote(precision: Precision, check: PrecisionCheck): string {
  return check.bleuDelta === undefined
    ? ''
    : `, ${precision} validation BLEU ${check.bleu!.toFixed(2)} (fp32 ${check.bleuFp32!.toFixed(2)}, Δ ${check.bleuDelta.toFixed(2)})`;
}

/** The Triton repository, written from the card once it is in the output folder. */
function triton(opts: ExportOptions, card: ModelCard, stored: StoredGraphs): Pick<BuiltExport<ModelCard>, 'finish'> {
  return opts.triton === undefined
    ? {}
    : { finish: () => writeTritonRepository(opts.triton!, card, stored.bytes, opts.tritonOptions) };
}

/** `N bytes of fp32 ONNX` for the summary line. */
function describe({ bytes, precision }: StoredGraphs): string {
  return `${bytes.encoder.length + bytes.decoder.length} bytes of ${precision} ONNX`;
}
