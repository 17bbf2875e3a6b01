/**
 * Vocabulary usage of generated captions, as the frozen-output-layer paper reports it for
 * captioning: distinct words over all generated captions, and the share of generated words that
 * occur fewer than 100 times in the training captions. The counting itself is
 * core/metrics/word-usage.ts's (shared with the translation reports); this adapts it to caption
 * text and to training counts held in a Map or a {@link Vocabulary}.
 *
 * Isomorphic: no Node APIs.
 */
import { pythonSplit, type Sentence } from './caption-ngrams.ts';
import { RARE_WORD_THRESHOLD, rareWordRate, vocabularyUsage } from './word-usage.ts';

/** Training counts by word: a Map, or anything with `count(word)` such as a Vocabulary built with counts. */
export type TrainCounts = ReadonlyMap<string, number> | { count(word: string): number | undefined };

export interface VocabUsage {
  /** Distinct words over all hypotheses. */
  distinctWords: number;
  /** Words over all hypotheses. */
  totalWords: number;
  /** Present when training counts were given. */
  rare?: {
    threshold: number;
    /** Generated words (occurrences) whose training count is below the threshold. */
    words: number;
    /** `words / totalWords`; 0 when nothing was generated. */
    share: number;
    /** Distinct rare words generated. */
    distinct: number;
  };
}

export interface VocabUsageOptions {
  trainCounts?: TrainCounts;
  /** @default {@link RARE_WORD_THRESHOLD} */
  rareThreshold?: number;
}

/** A word's training count; a word never seen in training counts 0. */
function frequencyLookup(counts: TrainCounts): (word: string) => number {
  if (counts instanceof Map) return (w) => counts.get(w) ?? 0;
  const withCount = counts as { count(word: string): number | undefined };
  return (w) => withCount.count(w) ?? 0;
}

/** Vocabulary statistics of generated captions; text is split on whitespace. */
export function vocabUsage(hyps: readonly Sentence[], opts: VocabUsageOptions = {}): VocabUsage {
  const sentences = hyps.map(pythonSplit);
  const totalWords = sentences.reduce((n, s) => n + s.length, 0);
  const result: VocabUsage = { distinctWords: vocabularyUsage(sentences), totalWords };
  if (opts.trainCounts) {
    const threshold = opts.rareThreshold ?? RARE_WORD_THRESHOLD;
    const frequencyOf = frequencyLookup(opts.trainCounts);
    const { rare, words } = rareWordRate(sentences, frequencyOf, threshold);
    const rareTypes = vocabularyUsage(sentences.map((s) => s.filter((w) => frequencyOf(w) < threshold)));
    result.rare = { threshold, words: rare, share: words === 0 ? 0 : rare / words, distinct: rareTypes };
  }
  return result;
}
