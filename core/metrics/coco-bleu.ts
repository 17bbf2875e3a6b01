/**
 * BLEU-1..4 as the MS COCO caption evaluation computes it (tylin/coco-caption,
 * pycocoevalcap/bleu/bleu_scorer.py, Chiang's scorer as modified by Fang and Lin), so caption
 * results compare with published Show-and-Tell / Show-Attend-and-Tell numbers:
 *
 * - corpus level: clipped n-gram matches and hypothesis n-grams are summed over all images first;
 * - clipping against the maximum count of each n-gram in any one reference of the image;
 * - the effective reference length of each image is the reference length closest to the
 *   hypothesis length, the shorter one on a tie (`option='closest'`);
 * - BLEU-n = (Π_{k≤n} (matches_k + 1e-15) / (guesses_k + 1e-9))^(1/n), times the brevity penalty
 *   exp(1 − r/c) when c < r, with c and r computed as (c + 1e-15) / (r + 1e-9). The epsilons keep
 *   an empty order from dividing by zero: it gives a near-zero score, not NaN.
 *
 * Not sacreBLEU (core/metrics/bleu.ts): no tokenisation of its own, no smoothing, and a different
 * reference length. Scores are on coco-caption's 0..1 scale.
 *
 * Isomorphic: no Node APIs.
 */
import { assertAligned, countNgrams, pythonSplit, type Sentence } from './caption-ngrams.ts';

/** coco-caption's BLEU over a set of images. */
export interface CocoBleu {
  /** BLEU-1..BLEU-n, index 0 is BLEU-1. */
  bleu: number[];
  /** Hypothesis words, summed over images. */
  testLen: number;
  /** Effective (closest) reference words, summed over images. */
  refLen: number;
  /** Clipped n-gram matches per order. */
  correct: number[];
  /** Hypothesis n-grams per order. */
  guess: number[];
}

const SMALL = 1e-9;
const TINY = 1e-15;

/**
 * Each image's statistics, in the order coco-caption sums them: one row per image of
 * `[testLen, refLen, correct_1..n, guess_1..n]`; {@link cocoBleuFromStats} of their column sums is
 * {@link cocoBleu}, and a paired bootstrap (./paired-bootstrap.ts) resamples the rows.
 * @param n highest n-gram order @default 4
 */
export function cocoBleuStats(
  hyps: readonly Sentence[],
  refs: readonly (readonly Sentence[])[],
  n = 4,
): { width: number; count: number; rows: Float64Array } {
  return imageRows('cocoBleuStats', hyps, refs, n);
}

function imageRows(
  fn: string,
  hyps: readonly Sentence[],
  refs: readonly (readonly Sentence[])[],
  n: number,
): { width: number; count: number; rows: Float64Array } {
  assertAligned(fn, hyps, refs);
  const width = 2 + 2 * n;
  const rows = new Float64Array(hyps.length * width);
  hyps.forEach((hyp, i) => {
    const row = rows.subarray(i * width, (i + 1) * width);
    // cook_refs: per-n-gram maximum count over this image's references.
    const maxCounts = new Map<string, number>();
    const refLens: number[] = [];
    for (const ref of refs[i]!) {
      const words = pythonSplit(ref);
      refLens.push(words.length);
      for (const [key, count] of countNgrams(words, n).counts)
        maxCounts.set(key, Math.max(maxCounts.get(key) ?? 0, count));
    }
    // cook_test
    const words = pythonSplit(hyp);
    const { counts, order } = countNgrams(words, n);
    for (let k = 1; k <= n; k++) row[2 + n + k - 1] = Math.max(0, words.length - k + 1);
    for (const [key, count] of counts) row[2 + order.get(key)! - 1]! += Math.min(maxCounts.get(key) ?? 0, count);
    row[0] = words.length;
    // _single_reflen(option='closest'): min over (|l − c|, l) tuples.
    row[1] = refLens.reduce((best, l) => {
      const d = Math.abs(l - words.length);
      const bd = Math.abs(best - words.length);
      return d < bd || (d === bd && l < best) ? l : best;
    });
  });
  return { width, count: hyps.length, rows };
}

/**
 * coco-caption's BLEU-1..n from statistics summed over images ({@link cocoBleuStats}'s layout).
 * @param n highest n-gram order @default 4
 */
export function cocoBleuFromStats(sums: ArrayLike<number>, n = 4): CocoBleu {
  if (sums.length !== 2 + 2 * n)
    throw new RangeError(`cocoBleuFromStats: ${sums.length} statistics given; order ${n} needs ${2 + 2 * n}`);
  const testLen = sums[0]!;
  const refLen = sums[1]!;
  const correct = Array.from({ length: n }, (_, k) => sums[2 + k]!);
  const guess = Array.from({ length: n }, (_, k) => sums[2 + n + k]!);
  const ratio = (testLen + TINY) / (refLen + SMALL);
  const bleu: number[] = [];
  for (let nn = 1; nn <= n; nn++) {
    let product = 1;
    for (let k = 0; k < nn; k++) product *= (correct[k]! + TINY) / (guess[k]! + SMALL);
    let score = product ** (1 / nn);
    if (ratio < 1) score *= Math.exp(1 - 1 / ratio);
    bleu.push(score);
  }
  return { bleu, testLen, refLen, correct, guess };
}

/**
 * Corpus BLEU of `hyps[i]` against `refs[i]`; sentences given as text are split on whitespace,
 * as the reference's `precook` does (`str.split()`).
 * @param n highest n-gram order @default 4
 */
export function cocoBleu(hyps: readonly Sentence[], refs: readonly (readonly Sentence[])[], n = 4): CocoBleu {
  const { width, count, rows } = imageRows('cocoBleu', hyps, refs, n);
  const sums = new Float64Array(width);
  for (let i = 0; i < count; i++) for (let j = 0; j < width; j++) sums[j]! += rows[i * width + j]!;
  return cocoBleuFromStats(sums, n);
}
