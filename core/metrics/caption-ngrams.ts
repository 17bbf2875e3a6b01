/**
 * What coco-caption's scorers share: sentences as the reference code splits them, and n-gram
 * counts. Isomorphic: no Node APIs.
 */
import { pySplit } from './python-text.ts';

/** A sentence as text (split the way the ported scorer splits it) or as tokens. */
export type Sentence = string | readonly string[];

/**
 * Python's `str.split()`: runs of whitespace separate, and no empty tokens. Whitespace is Python's set
 * (U+0085 and U+001C..U+001F are, U+FEFF is not), so a PTB token holding a no-break space splits here
 * as it does in the reference.
 */
export function pythonSplit(sentence: Sentence): readonly string[] {
  return typeof sentence === 'string' ? pySplit(sentence) : sentence;
}

/** Joins n-gram tokens into a map key; U+0000 cannot occur inside a token split from text. */
const SEP = '\u0000';

/** Counts of every 1..n-gram, keyed by {@link ngramKey}; `order` gives each key's n. */
export interface NgramCounts {
  counts: Map<string, number>;
  order: Map<string, number>;
}

/** coco-caption's `precook`: counts of all n-grams with 1 ≤ n ≤ maxN. */
export function countNgrams(words: readonly string[], maxN: number): NgramCounts {
  const counts = new Map<string, number>();
  const order = new Map<string, number>();
  for (let k = 1; k <= maxN; k++) {
    for (let i = 0; i + k <= words.length; i++) {
      const key = words.slice(i, i + k).join(SEP);
      counts.set(key, (counts.get(key) ?? 0) + 1);
      order.set(key, k);
    }
  }
  return { counts, order };
}

/** Checks that hypotheses and reference lists line up, naming the function. */
export function assertAligned(fn: string, hyps: readonly unknown[], refs: readonly (readonly unknown[])[]): void {
  if (hyps.length !== refs.length)
    throw new RangeError(`${fn}: ${hyps.length} hypotheses but ${refs.length} reference lists`);
  const empty = refs.findIndex((r) => r.length === 0);
  if (empty >= 0) throw new RangeError(`${fn}: hypothesis ${empty} has no references`);
}
