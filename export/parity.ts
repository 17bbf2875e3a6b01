import * as tf from '@tensorflow/tfjs-core';
import * as ort from 'onnxruntime-node';
import type { EncoderInput, NamedTensors, Seq2SeqModel } from '../models/index.ts';
import { createNodeSession } from '../core/runtime/ort-node.ts';

export interface ParityReport {
  sentences: number;
  steps: number;
  maxAbsDiff: number;
  /** Largest |Δ| / max(1, |value|): what the tolerance applies to. */
  maxScaledDiff: number;
  worst: { step: number; row: number; token: number; tfjs: number; onnx: number } | null;
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
 * with `pad` (see {@link tokenParityInputs}).
 */
export async function checkParity(
  model: Seq2SeqModel,
  encoderBytes: Uint8Array,
  decoderBytes: Uint8Array,
  samples: TokenParitySample[] | ParityInputs,
  bos: number,
  pad: number,
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
    });
    const actual = (out.log_probs as ort.Tensor).data as Float32Array;
    for (let i = 0; i < expected.length; i++) {
      // A row whose target has ended (its </s> was predicted at step length) is fed <pad> only to keep the batch's
      // shape: no decoder ever reads those steps, and the model never saw <pad> as an input in training, so their
      // values say nothing about the export.
      if (t > targets[Math.floor(i / V)]!.length) continue;
      const diff = Math.abs(expected[i] - actual[i]);
      const scaled = diff / Math.max(1, Math.abs(expected[i]));
      if (!(scaled <= report.maxScaledDiff) || Number.isNaN(diff)) {
        report.maxScaledDiff = Number.isNaN(diff) ? Infinity : scaled;
        report.worst = { step: t, row: Math.floor(i / V), token: i % V, tfjs: expected[i], onnx: actual[i] };
      }
      report.maxAbsDiff = Math.max(report.maxAbsDiff, diff);
    }
    const nextTf: NamedTensors = { ...tfInputs };
    for (const name of model.stateNames) {
      tfInputs[name].dispose();
      nextTf[name] = state[name];
      onnxInputs[name] = out[`next_${name}`] as ort.Tensor;
    }
    tfInputs = nextTf;
  }
  tf.dispose(Object.values(tfInputs));
  await encoder.release();
  await decoder.release();
  return report;
}
