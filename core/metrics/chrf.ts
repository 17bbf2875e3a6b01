/**
 * chrF (Popović, 2015) and chrF++ (Popović, 2017) as sacreBLEU computes them (sacrebleu/metrics/chrf.py
 * and metrics/helpers.py, release 2.6.0): character n-grams of orders 1..6 with whitespace removed,
 * plus word unigrams and bigrams for chrF++, an F-score with β = 2 averaged over the orders the
 * hypothesis and reference both have, and per segment the reference that scores best.
 *
 * Corpus chrF adds up the per-segment statistics first, as sacreBLEU does; sentence chrF is the same
 * computation on one segment.
 *
 * Isomorphic: no Node APIs.
 */
import { formatFixed, pySplit } from './python-text.ts';
import { SACREBLEU_VERSION } from './sacrebleu-version.ts';

export interface ChrfOptions {
  /** Character n-gram order. @default 6 */
  charOrder?: number;
  /** Word n-gram order: 0 is chrF, 2 is chrF++. @default 0 */
  wordOrder?: number;
  /** Weight of recall against precision. @default 2 */
  beta?: number;
  /** Lower-case hypotheses and references first. @default false */
  lowercase?: boolean;
  /** Keep whitespace inside character n-grams. @default false */
  whitespace?: boolean;
  /**
   * Average every order, with ε for empty ones, as chrF++.py, Moses and NLTK do; otherwise only the
   * orders present in both sides count (sacreBLEU's default). @default false
   */
  epsSmoothing?: boolean;
}

export interface ChrfScore {
  /** On sacreBLEU's 0..100 scale. */
  readonly score: number;
  /** `chrF2` or `chrF2++` (β, then one `+` per word order). */
  readonly name: string;
  /** [hyp, ref, match] per order, characters first: sacreBLEU's sufficient statistics. */
  readonly stats: readonly number[];
  /** sacreBLEU's line: `chrF2 = 54.32`, or `chrF2|nrefs:1|… = 54.32` with a signature. */
  format(options?: { width?: number; signature?: string }): string;
}

/** chrF++'s word splitter strips one of these from a word's end, else from its start (string.punctuation). */
const PUNCTUATION = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');

interface Resolved extends Required<ChrfOptions> {
  order: number;
}

function resolve(options: ChrfOptions): Resolved {
  const r = {
    charOrder: options.charOrder ?? 6,
    wordOrder: options.wordOrder ?? 0,
    beta: options.beta ?? 2,
    lowercase: options.lowercase ?? false,
    whitespace: options.whitespace ?? false,
    epsSmoothing: options.epsSmoothing ?? false,
  };
  for (const key of ['charOrder', 'wordOrder', 'beta'] as const) {
    if (!Number.isInteger(r[key]) || r[key] < 0)
      throw new RangeError(`chrf: '${key}' must be an integer >= 0, got ${r[key]}`);
  }
  if (r.charOrder + r.wordOrder === 0) throw new RangeError('chrf: charOrder + wordOrder must be at least 1');
  return { ...r, order: r.charOrder + r.wordOrder };
}

function count(items: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
  return counts;
}

/** Character n-gram counts of orders 1..maxOrder, over code points as Python slices strings. */
function charNgrams(line: string, maxOrder: number, whitespace: boolean): Map<string, number>[] {
  const chars = Array.from(whitespace ? line : pySplit(line).join(''));
  const out: Map<string, number>[] = [];
  for (let n = 1; n <= maxOrder; n++) {
    const grams: string[] = [];
    for (let i = 0; i + n <= chars.length; i++) grams.push(chars.slice(i, i + n).join(''));
    out.push(count(grams));
  }
  return out;
}

/**
 * chrF++'s word splitting (`_remove_punctuation`): one punctuation mark is split off a word's end, or
 * else off its start. Porting note: as in sacreBLEU, `(hi)` gives `(hi` and `)` (sacreBLEU #124).
 */
function chrfWords(sentence: string): string[] {
  const words: string[] = [];
  for (const w of pySplit(sentence)) {
    const chars = Array.from(w);
    if (chars.length === 1) words.push(w);
    else if (PUNCTUATION.has(chars.at(-1)!)) words.push(chars.slice(0, -1).join(''), chars.at(-1)!);
    else if (PUNCTUATION.has(chars[0]!)) words.push(chars[0]!, chars.slice(1).join(''));
    else words.push(w);
  }
  return words;
}

function wordNgrams(words: readonly string[], n: number): Map<string, number> {
  const grams: string[] = [];
  for (let i = 0; i + n <= words.length; i++) grams.push(words.slice(i, i + n).join(' '));
  return count(grams);
}

function allNgrams(sentence: string, r: Resolved): Map<string, number>[] {
  const grams = charNgrams(sentence, r.charOrder, r.whitespace);
  if (r.wordOrder > 0) {
    const words = chrfWords(sentence);
    for (let n = 1; n <= r.wordOrder; n++) grams.push(wordNgrams(words, n));
  }
  return grams;
}

/** [hyp, ref, match] of one order; a reference without n-grams of that order counts no hypothesis n-grams. */
function matchStatistics(hyp: Map<string, number>, ref: Map<string, number>): [number, number, number] {
  let match = 0;
  let hypCount = 0;
  for (const [gram, c] of hyp) {
    hypCount += c;
    const rc = ref.get(gram);
    if (rc !== undefined) match += Math.min(c, rc);
  }
  let refCount = 0;
  for (const c of ref.values()) refCount += c;
  return [ref.size > 0 ? hypCount : 0, refCount, match];
}

/** sacreBLEU's `_compute_f_score` over the flattened [hyp, ref, match] statistics. */
function fScore(stats: readonly number[], r: Resolved): number {
  const eps = 1e-16;
  const factor = r.beta ** 2;
  let score = 0;
  let effectiveOrder = 0;
  let avgPrec = 0;
  let avgRec = 0;
  for (let i = 0; i < r.order; i++) {
    const [nHyp, nRef, nMatch] = [stats[3 * i]!, stats[3 * i + 1]!, stats[3 * i + 2]!];
    const prec = nHyp > 0 ? nMatch / nHyp : eps;
    const rec = nRef > 0 ? nMatch / nRef : eps;
    const denom = factor * prec + rec;
    score += denom > 0 ? ((1 + factor) * prec * rec) / denom : eps;
    if (nHyp > 0 && nRef > 0) {
      avgPrec += prec;
      avgRec += rec;
      effectiveOrder++;
    }
  }
  if (r.epsSmoothing) return (100 * score) / r.order;
  if (effectiveOrder === 0) return 0;
  avgPrec /= effectiveOrder;
  avgRec /= effectiveOrder;
  if (avgPrec + avgRec === 0) return 0;
  return (100 * (1 + factor) * avgPrec * avgRec) / (factor * avgPrec + avgRec);
}

/** The statistics of the reference with the best F-score (the first one on a tie). */
function segmentStatistics(hyp: string, refs: readonly string[], r: Resolved): number[] {
  const hypGrams = allNgrams(hyp, r);
  let best: number[] = [];
  let bestF = -1;
  for (const ref of refs) {
    const refGrams = allNgrams(ref, r);
    const stats = hypGrams.flatMap((h, k) => matchStatistics(h, refGrams[k]!));
    const f = fScore(stats, r);
    if (f > bestF) {
      bestF = f;
      best = stats;
    }
  }
  return best;
}

function makeScore(stats: number[], r: Resolved): ChrfScore {
  const score = fScore(stats, r);
  const name = `chrF${r.beta}${'+'.repeat(r.wordOrder)}`;
  return {
    score,
    name,
    stats,
    format(options = {}) {
      const head = options.signature ? `${name}|${options.signature}` : name;
      return `${head} = ${formatFixed(score, options.width ?? 2)}`;
    },
  };
}

const lower = (s: string, r: Resolved) => (r.lowercase ? s.toLowerCase() : s);

/**
 * Corpus chrF, as sacreBLEU's `CHRF(...).corpus_score(hypotheses, references)`.
 * @param references reference streams: `references[k][i]` is the k-th reference of segment i; a
 *   `null`/`undefined` entry means segment i has fewer references.
 */
export function corpusChrf(
  hypotheses: readonly string[],
  references: readonly (readonly (string | null | undefined)[])[],
  options: ChrfOptions = {},
): ChrfScore {
  const r = resolve(options);
  if (references.length === 0) throw new Error('chrf: no reference streams given');
  references.forEach((stream, k) => {
    if (stream.length !== hypotheses.length) {
      throw new Error(
        `chrf: reference stream ${k + 1} has ${stream.length} lines, hypotheses have ${hypotheses.length}`,
      );
    }
  });
  const sums = new Array<number>(3 * r.order).fill(0);
  hypotheses.forEach((hyp, i) => {
    const refs = references.flatMap((stream) =>
      stream[i] === null || stream[i] === undefined ? [] : [lower(stream[i], r)],
    );
    if (refs.length === 0) throw new Error(`chrf: segment ${i + 1} has no reference`);
    segmentStatistics(lower(hyp, r), refs, r).forEach((v, j) => (sums[j]! += v));
  });
  return makeScore(sums, r);
}

/** Sentence chrF, as sacreBLEU's `CHRF(...).sentence_score(hypothesis, references)`. */
export function sentenceChrf(hypothesis: string, references: readonly string[], options: ChrfOptions = {}): ChrfScore {
  const r = resolve(options);
  if (references.length === 0) throw new Error('chrf: no references given');
  return makeScore(
    segmentStatistics(
      lower(hypothesis, r),
      references.map((ref) => lower(ref, r)),
      r,
    ),
    r,
  );
}

/**
 * sacreBLEU's chrF signature, e.g. `nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0`.
 * @param nrefs references per segment, or 'var' when it varies
 */
export function chrfSignature(nrefs: number | 'var', options: ChrfOptions = {}): string {
  const r = resolve(options);
  return [
    `nrefs:${nrefs}`,
    `case:${r.lowercase ? 'lc' : 'mixed'}`,
    `eff:${r.epsSmoothing ? 'no' : 'yes'}`,
    `nc:${r.charOrder}`,
    `nw:${r.wordOrder}`,
    `space:${r.whitespace ? 'yes' : 'no'}`,
    `version:${SACREBLEU_VERSION}`,
  ].join('|');
}
