/**
 * ROUGE-L as the MS COCO caption evaluation computes it (tylin/coco-caption,
 * pycocoevalcap/rouge/rouge.py, Vedantam): per image, the longest common subsequence with each
 * reference gives a precision (LCS / hypothesis length) and a recall (LCS / reference length);
 * the best precision and the best recall over the references, which may come from different
 * references, are combined as F_β = (1 + β²)·P·R / (R + β²·P) with β = 1.2; the corpus score is
 * the mean over images. Scores are on the 0..1 scale.
 *
 * Porting note: the reference splits text with `str.split(" ")`, so two spaces in a row make an
 * empty token and an empty sentence is one empty token; text given here is split the same way.
 * Captions from frost's tokenisers never contain either.
 *
 * Isomorphic: no Node APIs.
 */
import { assertAligned, type Sentence } from './caption-ngrams.ts';

/** The reference's β: recall weighs 1.2² as much as precision. */
const ROUGE_BETA = 1.2;

export interface RougeL {
  /** Mean over images. */
  score: number;
  /** Per image. */
  scores: number[];
}

function splitOnSpace(sentence: Sentence): readonly string[] {
  return typeof sentence === 'string' ? sentence.split(' ') : sentence;
}

/** Length of the longest common subsequence of two token lists (`my_lcs`). */
export function lcsLength(a: readonly string[], b: readonly string[]): number {
  const [long, short] = a.length >= b.length ? [a, b] : [b, a];
  let prev = new Int32Array(short.length + 1);
  let curr = new Int32Array(short.length + 1);
  for (let i = 1; i <= long.length; i++) {
    for (let j = 1; j <= short.length; j++) {
      curr[j] = long[i - 1] === short[j - 1] ? prev[j - 1]! + 1 : Math.max(prev[j]!, curr[j - 1]!);
    }
    [prev, curr] = [curr, prev];
  }
  return prev[short.length]!;
}

/** ROUGE-L of one hypothesis against its references (`calc_score`). */
export function rougeLSentence(hyp: Sentence, refs: readonly Sentence[], beta = ROUGE_BETA): number {
  const c = splitOnSpace(hyp);
  if (c.length === 0) return 0; // only token lists can be empty; the reference's text never is
  let precMax = 0;
  let recMax = 0;
  for (const ref of refs) {
    const r = splitOnSpace(ref);
    const lcs = lcsLength(r, c);
    precMax = Math.max(precMax, lcs / c.length);
    if (r.length > 0) recMax = Math.max(recMax, lcs / r.length);
  }
  if (precMax === 0 || recMax === 0) return 0;
  return ((1 + beta ** 2) * precMax * recMax) / (recMax + beta ** 2 * precMax);
}

/** Mean ROUGE-L over images. */
export function rougeL(hyps: readonly Sentence[], refs: readonly (readonly Sentence[])[], beta = ROUGE_BETA): RougeL {
  assertAligned('rougeL', hyps, refs);
  const scores = hyps.map((h, i) => rougeLSentence(h, refs[i]!, beta));
  return { score: scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : 0, scores };
}
