import * as tf from '@tensorflow/tfjs-core';
import type { EncoderInput, NamedTensors, Seq2SeqModel } from '../models/index.ts';
import { appendPosition, type AppendCacheSpec } from '../core/runtime/append-cache.ts';
import { createNodeSession, ort } from '../core/runtime/ort-node.ts';
import type { HostTensor } from '../core/runtime/row-state.ts';
import { EXCLUDED_LOGIT } from '../models/heads/output-mask.ts';

/** Log-probabilities below this are pinned ones (an excluded target's), not the model's: never compared. */
const PINNED = EXCLUDED_LOGIT / 2;

export interface ParityReport {
  sentences: number;
  steps: number;
  maxAbsDiff: number;
  /** Largest |Δ| / max(1, |value|) between the two sides' distributions: what the tolerance applies to. */
  maxScaledDiff: number;
  worst: { step: number; row: number; token: number; tfjs: number; onnx: number } | null;
  /**
   * Largest |log Σ exp(log_probs)| of the exported graph's rows: how far its distributions are from summing to 1,
   * held to the same tolerance. Absent in reports made before it was measured.
   */
  maxNormError?: number;
  /** The same for tfjs's rows, the reference: recorded, not held to the bar (it is why the rows are renormalised). */
  maxReferenceNormError?: number;
}

/**
 * Compares one step's rows, [rows, V] log-probabilities from tfjs (`expected`) and onnxruntime (`actual`), into
 * `report`, skipping rows `reached` says no decoder reads, and entries both sides pin below {@link PINNED} (targets
 * the output layer excludes: the graph adds the offset to the logit, tfjs replaces the logit by it). Each side is
 * renormalised in float64 first: tfjs's own log-softmax normalised a trained Transformer's rows only to within
 * ~1e-4 (`maxReferenceNormError` in its card, against onnxruntime's `maxNormError` of ~1e-5), a shift of the whole
 * row that no search sees; the graph's own normalisation is held to the bar separately, so a graph that returns
 * logits instead of log-probabilities is still refused.
 */
export function compareStep(
  report: ParityReport,
  step: number,
  expected: Float32Array,
  actual: Float32Array,
  V: number,
  reached: (row: number) => boolean,
): void {
  const rows = expected.length / V;
  for (let r = 0; r < rows; r++) {
    if (!reached(r)) continue;
    const [lseE, lseA] = [logSumExp(expected, r * V, V), logSumExp(actual, r * V, V)];
    const normError = (lse: number) => (Number.isNaN(lse) ? Infinity : Math.abs(lse));
    report.maxNormError = Math.max(report.maxNormError ?? 0, normError(lseA));
    report.maxReferenceNormError = Math.max(report.maxReferenceNormError ?? 0, normError(lseE));
    for (let v = 0; v < V; v++) {
      const i = r * V + v;
      const e = expected[i]! - lseE;
      // A target the output layer excludes (models/heads/output-mask.ts) in both engines: probability 0 either way.
      if (e < PINNED && actual[i]! - lseA < PINNED) continue;
      const diff = Math.abs(e - (actual[i]! - lseA));
      const scaled = diff / Math.max(1, Math.abs(e));
      if (!(scaled <= report.maxScaledDiff) || Number.isNaN(diff)) {
        report.maxScaledDiff = Number.isNaN(diff) ? Infinity : scaled;
        report.worst = { step, row: r, token: v, tfjs: expected[i]!, onnx: actual[i]! };
      }
      report.maxAbsDiff = Math.max(report.maxAbsDiff, Number.isNaN(diff) ? Infinity : diff);
    }
  }
}

/**
 * Why `report` fails `tolerance`, with the value that would pass it when that is within --parity-tolerance's reach;
 * null when it passes. One rule for every export (seq2seq and language models).
 */
export function parityRefusal(report: ParityReport, tolerance: number): string | null {
  const normError = report.maxNormError ?? 0;
  const over = Math.max(report.maxScaledDiff, normError);
  if (over <= tolerance) return null;
  const what =
    normError > report.maxScaledDiff
      ? `onnxruntime's log-probabilities do not normalise: |log Σ p| reaches ${normError.toExponential(2)}`
      : `onnxruntime differs from tfjs by ${report.maxScaledDiff.toExponential(2)} at ${JSON.stringify(report.worst)}`;
  return (
    `export refused: ${what} (tolerance ${tolerance})` +
    // A difference this small is rounding, or a bug too subtle to see in BLEU; the user decides, on the record.
    (over <= MAX_PARITY_TOLERANCE
      ? `; --parity-tolerance ${Math.min(MAX_PARITY_TOLERANCE, 1.1 * over).toExponential(1)} or more exports it anyway, recorded in the card`
      : '')
  );
}

/** log Σ exp(x[offset .. offset + n)) in float64, shifted by the maximum; NaN if any value is NaN. */
function logSumExp(x: Float32Array, offset: number, n: number): number {
  let max = -Infinity;
  for (let i = offset; i < offset + n; i++) {
    if (Number.isNaN(x[i])) return NaN;
    max = Math.max(max, x[i]!);
  }
  if (max === -Infinity) return -Infinity;
  let sum = 0;
  for (let i = offset; i < offset + n; i++) sum += Math.exp(x[i]! - max);
  return max + Math.log(sum);
}

/** |Δ| ≤ 1e-4 · max(1, |value|), the bar an export must pass unless its caller gives another. */
export const PARITY_TOLERANCE = 1e-4;

/**
 * The loosest bar a caller may set (`--parity-tolerance`), for a trained model whose export differs by a little
 * more than the default (docs/export.md has the one seen so far); 1e-2 still catches a wrong op, a missing bias
 * or a misread weight, which differ by whole units.
 */
export const MAX_PARITY_TOLERANCE = 1e-2;

/** A caller's tolerance, checked: positive and at most {@link MAX_PARITY_TOLERANCE}. */
export function parityTolerance(value: number | undefined): number {
  if (value === undefined) return PARITY_TOLERANCE;
  if (!(value > 0 && value <= MAX_PARITY_TOLERANCE))
    throw new RangeError(`parity tolerance must be in (0, ${MAX_PARITY_TOLERANCE}], got ${value}`);
  return value;
}

/** A source sentence and a target prefix to force, as ids without specials. */
export interface TokenParitySample {
  src: Int32Array;
  tgt: Int32Array;
}

/**
 * One batch of encoder inputs, as the tfjs model reads them and as the encoder graph is fed (the
 * two differ for a model behind a frozen foreign encoder: tfjs reads its features, the merged
 * graph reads pixels), with the target ids each row is teacher-forced through.
 */
export interface ParityInputs {
  /** Builds the tfjs encoder input (called inside tf.tidy). */
  tfjs(): EncoderInput;
  onnx: Record<string, ort.Tensor>;
  targets: Int32Array[];
  /**
   * Why the inputs are made up (seeded random tokens or pixels) rather than validation data; absent when they are real.
   */
  synthetic?: string;
}

/** Token sources padded with `pad` (an empty source is one <pad> of length 1, as in training's evaluation). */
export function tokenParityInputs(samples: TokenParitySample[], pad: number, synthetic?: string): ParityInputs {
  const B = samples.length;
  const S = Math.max(1, ...samples.map((s) => s.src.length));
  const ids = new Int32Array(B * S).fill(pad);
  const lengths = new Int32Array(B);
  samples.forEach((s, b) => {
    ids.set(s.src, b * S);
    lengths[b] = Math.max(1, s.src.length);
  });
  return {
    tfjs: () => ({ kind: 'tokens', ids: tf.tensor2d(ids, [B, S], 'int32'), lengths: tf.tensor1d(lengths, 'int32') }),
    onnx: {
      src_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [B, S]),
      src_lengths: new ort.Tensor('int64', BigInt64Array.from(lengths, BigInt), [B]),
    },
    targets: samples.map((s) => s.tgt),
    ...(synthetic === undefined ? {} : { synthetic }),
  };
}

/**
 * Runs the same inputs and teacher-forced target prefixes through the tfjs model and the exported
 * graphs in onnxruntime-node, comparing every step's log-probabilities. Token samples are padded
 * with `pad` (see {@link tokenParityInputs}). With `cache` (the card's `graphs.decoder.cache`), the step graph's
 * append caches are fed and filled as the runtime does (core/runtime/append-cache.ts).
 */
export async function checkParity(
  model: Seq2SeqModel,
  encoderBytes: Uint8Array,
  decoderBytes: Uint8Array,
  samples: TokenParitySample[] | ParityInputs,
  bos: number,
  pad: number,
  cache?: AppendCacheSpec,
): Promise<ParityReport> {
  const inputs = Array.isArray(samples) ? tokenParityInputs(samples, pad) : samples;
  const targets = inputs.targets;
  const encoder = await createNodeSession(encoderBytes);
  const decoder = await createNodeSession(decoderBytes);
  const B = targets.length;
  const T = Math.max(1, ...targets.map((t) => t.length));

  let tfInputs: NamedTensors = tf.tidy(() => model.encode(inputs.tfjs()));
  const encOut = await encoder.run(inputs.onnx);
  const onnxInputs: Record<string, ort.Tensor> = {};
  for (const name of [...model.stateNames, ...model.memoryNames]) onnxInputs[name] = encOut[name] as ort.Tensor;

  const report: ParityReport = { sentences: B, steps: T, maxAbsDiff: 0, maxScaledDiff: 0, worst: null };
  for (let t = 0; t < T; t++) {
    const prev = new Int32Array(B);
    targets.forEach((tgt, b) => (prev[b] = t === 0 ? bos : (tgt[t - 1] ?? pad)));
    const { logProbs, state } = tf.tidy(() => model.step(tf.tensor1d(prev, 'int32'), tfInputs));
    const expected = (await logProbs.data()) as Float32Array;
    const V = logProbs.shape[1];
    logProbs.dispose();
    const out = await decoder.run({
      ...onnxInputs,
      prev_token: new ort.Tensor('int64', BigInt64Array.from(prev, BigInt), [B]),
      ...(cache && { [cache.length]: new ort.Tensor('int64', [BigInt(t)], []) }),
    });
    const actual = (out.log_probs as ort.Tensor).data as Float32Array;
    // A row whose target has ended (its </s> was predicted at step length) is fed <pad> only to keep the batch's
    // shape: no decoder ever reads those steps, and the model never saw <pad> as an input in training, so their
    // values say nothing about the export.
    compareStep(report, t, expected, actual, V, (row) => t <= targets[row]!.length);
    const nextTf: NamedTensors = { ...tfInputs };
    for (const name of model.stateNames) {
      tfInputs[name].dispose();
      nextTf[name] = state[name];
      const appended = cache?.states[name];
      onnxInputs[name] = appended
        ? (appendPosition(
            ort,
            onnxInputs[name] as HostTensor,
            t,
            out[appended] as HostTensor,
            cache!.axis,
            false,
          ) as ort.Tensor)
        : (out[`next_${name}`] as ort.Tensor);
    }
    tfInputs = nextTf;
  }
  tf.dispose(Object.values(tfInputs));
  await encoder.release();
  await decoder.release();
  return report;
}
