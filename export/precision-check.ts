/**
 * The check a reduced-precision export passes instead of the 1e-4 parity bar: fp16/int8 weights
 * move log-probabilities by far more than 1e-4 (that is the point of them), so what matters is
 * whether translations get worse. Both the float32 graphs and the converted ones are run through
 * onnxruntime-node on the run's validation split with greedy search, and their corpus BLEU is
 * compared: same runtime, same search, only the weights differ. The float32 graphs themselves have
 * passed the strict parity check against tfjs before conversion.
 */
import { ort } from '../core/runtime/ort-node.ts';
import { corpusBleu } from '../core/metrics/bleu.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import { Seq2SeqRuntime, type GraphLoader } from '../core/runtime/seq2seq.ts';
import { loadParallelCorpus, type Pair } from '../train/data/corpus.ts';
import type { TranslationRunConfig } from '../train/run-config.ts';
import type { Precision } from './precision.ts';

/**
 * Validation sentences translated per precision unless told otherwise: enough for a stable corpus BLEU, quick on a
 * laptop.
 */
export const PRECISION_CHECK_SENTENCES = 300;

/** Sentences per encoder batch: bounds memory on long validation sets. */
const BATCH = 64;

/** Graph bytes of one precision. */
export interface GraphBytes {
  encoder: Uint8Array;
  decoder: Uint8Array;
}

/** The card's `precisionCheck`: how the converted model compares with the float32 one. */
export interface PrecisionCheck {
  reference: 'fp32';
  precision: Precision;
  /** Validation sentences translated (0 when the run's corpus is not on this machine: no BLEU then). */
  sentences: number;
  /** Greedy corpus BLEU (lower-cased, 13a) through onnxruntime of the float32 and the converted graphs. */
  bleuFp32?: number;
  bleu?: number;
  /** bleu − bleuFp32. */
  bleuDelta?: number;
  /** Both graph files together, uncompressed. */
  bytesFp32: number;
  bytes: number;
  /** Initializers stored at the reduced precision. */
  convertedWeights: number;
  /** Largest |Δ log-prob| against tfjs on the parity sentences: recorded, not held to 1e-4. */
  maxAbsLogProbDiff: number;
}

/**
 * The first `max` validation pairs of the run's corpus, or none when the corpus is not on this
 * machine (an export from a copied run folder still works; it just records no BLEU).
 */
export async function validationPairs(config: TranslationRunConfig, max = PRECISION_CHECK_SENTENCES): Promise<Pair[]> {
  try {
    const corpus = await loadParallelCorpus({
      dataDir: config.data.dir,
      src: config.data.src,
      tgt: config.data.tgt,
      kind: config.data.kind,
    });
    return corpus.val.slice(0, max);
  } catch {
    return [];
  }
}

/** Greedy corpus BLEU of `graphs` (described by `card`) on `pairs`, through onnxruntime-node. */
async function greedyBleu(
  card: ModelCard,
  graphs: GraphBytes,
  pairs: readonly Pair[],
  files?: GraphLoader,
): Promise<number> {
  const runtime = await Seq2SeqRuntime.create({
    ort,
    card,
    graphs,
    files,
    sessionOptions: { graphOptimizationLevel: 'all' },
  });
  try {
    const hypotheses: string[] = [];
    for (let i = 0; i < pairs.length; i += BATCH) {
      const out = await runtime.translate(
        pairs.slice(i, i + BATCH).map((p) => p.src),
        { beam: 1 },
      );
      hypotheses.push(...out.map((t) => t.text));
    }
    // Lower-cased like training's validation BLEU (train/evaluate.ts), so the numbers are comparable.
    return corpusBleu(hypotheses, [pairs.map((p) => p.tgt)], { lowercase: true }).score;
  } finally {
    await runtime.release();
  }
}

/** Compares converted graphs with their float32 originals; see the module doc. */
export async function checkPrecision(args: {
  card: ModelCard;
  precision: Precision;
  fp32: GraphBytes;
  converted: GraphBytes;
  pairs: readonly Pair[];
  convertedWeights: number;
  maxAbsLogProbDiff: number;
  /** The card's other files (subword models). */
  files?: GraphLoader;
}): Promise<PrecisionCheck> {
  const { card, fp32, converted, pairs } = args;
  const check: PrecisionCheck = {
    reference: 'fp32',
    precision: args.precision,
    sentences: pairs.length,
    bytesFp32: fp32.encoder.length + fp32.decoder.length,
    bytes: converted.encoder.length + converted.decoder.length,
    convertedWeights: args.convertedWeights,
    maxAbsLogProbDiff: args.maxAbsLogProbDiff,
  };
  if (pairs.length > 0) {
    check.bleuFp32 = await greedyBleu(card, fp32, pairs, args.files);
    check.bleu = await greedyBleu(card, converted, pairs, args.files);
    check.bleuDelta = check.bleu - check.bleuFp32;
  }
  return check;
}
