/**
 * CIDEr-D (Vedantam et al., 2015) as coco-caption computes it (vrama91/cider,
 * pyciderevalcap/ciderD/ciderD_scorer.py with `df_mode="corpus"`; tylin/coco-caption's
 * pycocoevalcap/cider is the same computation and reports it as "CIDEr"):
 *
 * - n-grams of orders 1..4 weighted by tf·idf, where the document frequency of an n-gram is the
 *   number of images of the evaluated set whose references contain it, and idf = log(N) −
 *   log(max(1, df)) for N images;
 * - per order, the cosine similarity of hypothesis and each reference, with the hypothesis weights
 *   clipped to the reference's (`min(vec_hyp, vec_ref) · vec_ref`), and a Gaussian length penalty
 *   exp(−δ² / 2σ²), σ = 6;
 * - averaged over the orders and the references, times 10; the corpus score is the mean over images.
 *
 * Porting notes, each kept because it changes scores:
 * - δ, the "length" difference, is the difference of the sentences' *bigram* counts (the reference
 *   adds up term frequencies where `n == 1`, the 0-based order of bigrams). For sentences of at
 *   least one word that equals the difference in words.
 * - An order where either vector has zero norm contributes 0 (ciderD's guard; without it, 0/0).
 * - The penalty is computed as `Math.E ** x`, as the reference's `np.e ** x`.
 *
 * Isomorphic: no Node APIs.
 */
import { assertAligned, countNgrams, type NgramCounts, pythonSplit, type Sentence } from './caption-ngrams.ts';

export interface CiderDOptions {
  /** Highest n-gram order. @default 4 */
  n?: number;
  /** Standard deviation of the length penalty. @default 6 */
  sigma?: number;
}

export interface CiderD {
  /** Mean over images (coco-caption's scale: 0..10 in principle, about 0.5..1.5 for real systems). */
  score: number;
  /** Per image. */
  scores: number[];
}

/** tf-idf weights of one sentence, per order, with their L2 norms and bigram count. */
interface Vectors {
  vec: Array<Map<string, number>>;
  norm: number[];
  length: number;
}

export function ciderD(
  hyps: readonly Sentence[],
  refs: readonly (readonly Sentence[])[],
  opts: CiderDOptions = {},
): CiderD {
  assertAligned('ciderD', hyps, refs);
  const n = opts.n ?? 4;
  const sigma = opts.sigma ?? 6;
  const cookedRefs = refs.map((rs) => rs.map((r) => countNgrams(pythonSplit(r), n)));
  const cookedHyps = hyps.map((h) => countNgrams(pythonSplit(h), n));

  // compute_doc_freq: in how many images' reference sets each n-gram occurs.
  const df = new Map<string, number>();
  for (const image of cookedRefs) {
    const seen = new Set<string>();
    for (const ref of image) for (const key of ref.counts.keys()) seen.add(key);
    for (const key of seen) df.set(key, (df.get(key) ?? 0) + 1);
  }
  const refLen = Math.log(cookedRefs.length);

  const toVectors = ({ counts, order }: NgramCounts): Vectors => {
    const vec = Array.from({ length: n }, () => new Map<string, number>());
    const norm = new Array<number>(n).fill(0);
    let length = 0;
    for (const [key, tf] of counts) {
      const k = order.get(key)! - 1;
      const w = tf * (refLen - Math.log(Math.max(1, df.get(key) ?? 0)));
      vec[k]!.set(key, w);
      norm[k]! += w ** 2;
      if (k === 1) length += tf;
    }
    return { vec, norm: norm.map(Math.sqrt), length };
  };

  const sim = (hyp: Vectors, ref: Vectors): number[] => {
    const delta = hyp.length - ref.length;
    const penalty = Math.E ** (-(delta ** 2) / (2 * sigma ** 2));
    const val = new Array<number>(n).fill(0);
    for (let k = 0; k < n; k++) {
      for (const [key, wh] of hyp.vec[k]!) {
        const wr = ref.vec[k]!.get(key) ?? 0;
        val[k]! += Math.min(wh, wr) * wr;
      }
      if (hyp.norm[k] !== 0 && ref.norm[k] !== 0) val[k]! /= hyp.norm[k]! * ref.norm[k]!;
      val[k]! *= penalty;
    }
    return val;
  };

  const scores = cookedHyps.map((cooked, i) => {
    const hyp = toVectors(cooked);
    const sum = new Array<number>(n).fill(0);
    for (const ref of cookedRefs[i]!) sim(hyp, toVectors(ref)).forEach((v, k) => (sum[k]! += v));
    const mean = sum.reduce((a, b) => a + b, 0) / n;
    return (mean / cookedRefs[i]!.length) * 10;
  });
  return { score: scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : 0, scores };
}
