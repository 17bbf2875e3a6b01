/**
 * How much of the vocabulary a model's output uses: the number of distinct words it produces, and
 * the share of its words that were rare in training. Frozen output layers raised both in the
 * captioning experiments of the paper frost follows (721 → 1378 distinct words on MSCOCO).
 *
 * Inputs are tokenised sentences with special tokens already removed; what counts as a word (e.g.
 * whether `<unk>` does) is the caller's choice.
 *
 * Isomorphic: no Node APIs.
 */

/** A word is rare when it occurs fewer than this many times in the training targets. */
export const RARE_WORD_THRESHOLD = 100;

type Sentences = Iterable<readonly string[]>;

/** Distinct words over all sentences. */
export function vocabularyUsage(sentences: Sentences): number {
  const seen = new Set<string>();
  for (const s of sentences) for (const w of s) seen.add(w);
  return seen.size;
}

export interface RareWordRate {
  /** Produced words (tokens, not types) that are rare. */
  rare: number;
  /** All produced words. */
  words: number;
  /** rare / words; NaN for no words. */
  rate: number;
}

/**
 * Share of produced words (tokens) whose training frequency is below `threshold`.
 * @param frequencyOf training count of a word; words never seen in training should get 0
 */
export function rareWordRate(
  sentences: Sentences,
  frequencyOf: (word: string) => number,
  threshold = RARE_WORD_THRESHOLD,
): RareWordRate {
  let rare = 0;
  let words = 0;
  for (const s of sentences) {
    for (const w of s) {
      words++;
      if (frequencyOf(w) < threshold) rare++;
    }
  }
  return { rare, words, rate: words === 0 ? NaN : rare / words };
}
