/**
 * sacreBLEU-compatible BLEU (Papineni et al., 2002), so scores in frost reports can be compared with
 * published ones. Ported from sacreBLEU 2.6.0 (sacrebleu/metrics/bleu.py; the tokenisers are in
 * ./tokenizers/); same statistics, smoothing, effective order, brevity penalty and number formatting.
 *
 * Isomorphic: no Node APIs.
 */

import { formatFixed, pyRstrip, pySplit } from './python-text.ts';
import { SACREBLEU_VERSION } from './sacrebleu-version.ts';
import { type BleuTokenizerName, getBleuTokenizer } from './tokenizers/index.ts';

export { formatFixed } from './python-text.ts';
export {
  bleuTokenizers,
  type BleuTokenizerName,
  tokenize13a,
  tokenizeChar,
  tokenizeIntl,
  tokenizeZh,
} from './tokenizers/index.ts';

/** Smoothing methods of Chen & Cherry (2014) as named by sacreBLEU. */
export type SmoothMethod = 'exp' | 'floor' | 'add-k' | 'none';

export interface BleuOptions {
  /** @default '13a' */
  tokenize?: BleuTokenizerName;
  /** Lower-case hypotheses and references before tokenising. @default false */
  lowercase?: boolean;
  /** @default 'exp' */
  smoothMethod?: SmoothMethod;
  /** Value for 'floor' (default 0.1) and 'add-k' (default 1); ignored otherwise. */
  smoothValue?: number;
  /** @default 4 */
  maxNgramOrder?: number;
  /**
   * Average only over n-gram orders that the hypothesis has (sentence-level BLEU).
   * @default false for {@link corpusBleu}, true for {@link sentenceBleu}
   */
  effectiveOrder?: boolean;
}

export interface FormatOptions {
  /** Decimals of the score. @default 2 */
  width?: number;
  /** A signature (see {@link bleuSignature}) to print after the name, as `BLEU|nrefs:1|... = ...`. */
  signature?: string;
}

/** A BLEU result; numbers are on sacreBLEU's scale (score and precisions in 0..100). */
export interface BleuScore {
  readonly score: number;
  /** Matched n-grams per order (1..maxNgramOrder). */
  readonly counts: readonly number[];
  /** Hypothesis n-grams per order. */
  readonly totals: readonly number[];
  /** Smoothed n-gram precisions per order, in percent. */
  readonly precisions: readonly number[];
  /** Brevity penalty. */
  readonly bp: number;
  /** Hypothesis length in tokens. */
  readonly sysLen: number;
  /** Effective reference length in tokens (closest reference per segment). */
  readonly refLen: number;
  /** sysLen / refLen (0 if refLen is 0). */
  readonly ratio: number;
  /** sacreBLEU's one-line report: `BLEU = 34.56 67.8/45.6/34.5/23.4 (BP = 0.987 ratio = ... ref_len = 1250)`. */
  format(options?: FormatOptions): string;
}

const SMOOTH_DEFAULTS: Record<SmoothMethod, number | undefined> = {
  none: undefined,
  floor: 0.1,
  'add-k': 1,
  exp: undefined,
};

const MAX_NGRAM_ORDER = 4;

// ---------------------------------------------------------------------------------------------
// Statistics

interface ReferenceInfo {
  ngrams: Map<string, number>;
  lengths: number[];
}

/**
 * n-gram counts of a pre-processed line, keyed by the space-joined n-gram (tokens hold no whitespace,
 * so the key is unambiguous; sacreBLEU uses tuples).
 */
function extractNgrams(line: string, maxOrder: number): { ngrams: Map<string, number>; length: number } {
  const tokens = pySplit(line);
  const ngrams = new Map<string, number>();
  for (let n = 1; n <= maxOrder; n++) {
    for (let i = 0; i + n <= tokens.length; i++) {
      const key = tokens.slice(i, i + n).join(' ');
      ngrams.set(key, (ngrams.get(key) ?? 0) + 1);
    }
  }
  return { ngrams, length: tokens.length };
}

/** Closest reference length to the hypothesis length; on a tie, the shorter reference. */
function closestRefLength(hypLen: number, refLens: readonly number[]): number {
  let closestDiff = -1;
  let closestLen = -1;
  for (const refLen of refLens) {
    const diff = Math.abs(hypLen - refLen);
    if (closestDiff === -1 || diff < closestDiff) {
      closestDiff = diff;
      closestLen = refLen;
    } else if (diff === closestDiff && refLen < closestLen) {
      closestLen = refLen;
    }
  }
  return closestLen;
}

interface Resolved {
  tokenize: (line: string) => string;
  lowercase: boolean;
  smoothMethod: SmoothMethod;
  smoothValue: number | undefined;
  maxNgramOrder: number;
  effectiveOrder: boolean;
}

function resolve(options: BleuOptions, effectiveOrderDefault: boolean): Resolved {
  const tokenize = getBleuTokenizer(options.tokenize ?? '13a');
  const smoothMethod = options.smoothMethod ?? 'exp';
  if (!(smoothMethod in SMOOTH_DEFAULTS)) {
    throw new Error(
      `bleu: unknown smooth method '${smoothMethod}' (known: ${Object.keys(SMOOTH_DEFAULTS).join(', ')})`,
    );
  }
  return {
    tokenize,
    lowercase: options.lowercase ?? false,
    smoothMethod,
    smoothValue: options.smoothValue,
    maxNgramOrder: options.maxNgramOrder ?? MAX_NGRAM_ORDER,
    effectiveOrder: options.effectiveOrder ?? effectiveOrderDefault,
  };
}

/** Porting note: sacreBLEU's `_preprocess_segment`: lower-case, rstrip (Python whitespace), tokenise. */
function preprocess(line: string, r: Resolved): string {
  return r.tokenize(pyRstrip(r.lowercase ? line.toLowerCase() : line));
}

function referenceInfo(refs: readonly string[], r: Resolved): ReferenceInfo {
  const ngrams = new Map<string, number>();
  const lengths: number[] = [];
  for (const ref of refs) {
    const info = extractNgrams(preprocess(ref, r), r.maxNgramOrder);
    lengths.push(info.length);
    // merge across references: the max count of each n-gram in any one reference
    for (const [ngram, count] of info.ngrams) ngrams.set(ngram, Math.max(ngrams.get(ngram) ?? 0, count));
  }
  return { ngrams, lengths };
}

/** [hypLen, refLen, correct_1..N, total_1..N] for one segment, as sacreBLEU's segment statistics. */
function segmentStats(hyp: string, ref: ReferenceInfo, r: Resolved): number[] {
  const { ngrams, length } = extractNgrams(preprocess(hyp, r), r.maxNgramOrder);
  const correct = new Array<number>(r.maxNgramOrder).fill(0);
  const total = new Array<number>(r.maxNgramOrder).fill(0);
  for (const [ngram, count] of ngrams) {
    let n = 0;
    for (let i = ngram.indexOf(' '); i !== -1; i = ngram.indexOf(' ', i + 1)) n++;
    total[n]! += count;
    const refCount = ref.ngrams.get(ngram);
    if (refCount !== undefined) correct[n]! += Math.min(count, refCount);
  }
  return [length, closestRefLength(length, ref.lengths), ...correct, ...total];
}

// ---------------------------------------------------------------------------------------------
// Scoring

/** Python's `math.log` floored as sacreBLEU's `my_log`: log(0) is a huge negative, not -Infinity. */
function myLog(x: number): number {
  return x === 0 ? -9999999999 : Math.log(x);
}

/**
 * BLEU from sufficient statistics, with smoothing (sacreBLEU's `BLEU.compute_bleu`).
 *
 * Porting note: as in sacreBLEU, 'add-k' adds k to the order >= 2 counts and totals, and the returned
 * `counts`/`totals` include that k.
 */
export function computeBleu(
  correct: readonly number[],
  total: readonly number[],
  sysLen: number,
  refLen: number,
  options: Pick<BleuOptions, 'smoothMethod' | 'smoothValue' | 'effectiveOrder' | 'maxNgramOrder'> = {},
): BleuScore {
  const smoothMethod = options.smoothMethod ?? 'none';
  const smoothValue = options.smoothValue ?? SMOOTH_DEFAULTS[smoothMethod] ?? 0;
  const maxOrder = options.maxNgramOrder ?? MAX_NGRAM_ORDER;
  const counts = [...correct];
  const totals = [...total];

  let bp = 1.0;
  if (sysLen < refLen) bp = sysLen > 0 ? Math.exp(1 - refLen / sysLen) : 0.0;

  const precisions = new Array<number>(maxOrder).fill(0);
  // early stop if there are no matches (sacreBLEU #141)
  if (!counts.some((c) => c !== 0)) return makeScore(0, counts, totals, precisions, bp, sysLen, refLen);

  let smoothMteval = 1;
  let effOrder = maxOrder;
  for (let n = 1; n <= maxOrder; n++) {
    if (smoothMethod === 'add-k' && n > 1) {
      counts[n - 1]! += smoothValue;
      totals[n - 1]! += smoothValue;
    }
    if (totals[n - 1] === 0) break;
    if (options.effectiveOrder) effOrder = n;
    if (counts[n - 1] === 0) {
      if (smoothMethod === 'exp') {
        smoothMteval *= 2;
        precisions[n - 1] = 100 / (smoothMteval * totals[n - 1]!);
      } else if (smoothMethod === 'floor') {
        precisions[n - 1] = (100 * smoothValue) / totals[n - 1]!;
      }
    } else {
      precisions[n - 1] = (100 * counts[n - 1]!) / totals[n - 1]!;
    }
  }

  let logSum = 0;
  for (const p of precisions.slice(0, effOrder)) logSum += myLog(p);
  return makeScore(bp * Math.exp(logSum / effOrder), counts, totals, precisions, bp, sysLen, refLen);
}

function makeScore(
  score: number,
  counts: number[],
  totals: number[],
  precisions: number[],
  bp: number,
  sysLen: number,
  refLen: number,
): BleuScore {
  const ratio = refLen ? sysLen / refLen : 0;
  return {
    score,
    counts,
    totals,
    precisions,
    bp,
    sysLen,
    refLen,
    ratio,
    format(options: FormatOptions = {}): string {
      const name = options.signature ? `BLEU|${options.signature}` : 'BLEU';
      const prec = precisions.map((p) => formatFixed(p, 1)).join('/');
      return (
        `${name} = ${formatFixed(score, options.width ?? 2)} ${prec} (BP = ${formatFixed(bp, 3)} ` +
        `ratio = ${formatFixed(ratio, 3)} hyp_len = ${sysLen} ref_len = ${refLen})`
      );
    },
  };
}

/**
 * Each segment's sufficient statistics, as sacreBLEU's `_extract_corpus_statistics`: one row per segment,
 * `[hypLen, refLen, correct_1..N, total_1..N]` (N = maxNgramOrder). Corpus BLEU is {@link bleuFromStats} of the
 * rows' column sums; a paired bootstrap (./paired-bootstrap.ts) resamples the rows.
 */
export interface BleuSegmentStats {
  /** Values per segment: 2 + 2·maxNgramOrder. */
  readonly width: number;
  /** Segments. */
  readonly count: number;
  /** Segment i's statistics at [i·width, (i+1)·width). */
  readonly rows: Float64Array;
}

/**
 * The per-segment statistics of {@link corpusBleu}: the same arguments, the same checks.
 *
 * @param hypotheses one detokenised line per segment
 * @param references reference streams: `references[k][i]` is the k-th reference of segment i. A
 *   `null`/`undefined` entry means segment i has fewer references.
 */
export function bleuSegmentStats(
  hypotheses: readonly string[],
  references: readonly (readonly (string | null | undefined)[])[],
  options: BleuOptions = {},
): BleuSegmentStats {
  return segmentRows(hypotheses, references, resolve(options, false));
}

function segmentRows(
  hypotheses: readonly string[],
  references: readonly (readonly (string | null | undefined)[])[],
  r: Resolved,
): BleuSegmentStats {
  if (references.length === 0) throw new Error('bleu: no reference streams given');
  references.forEach((stream, k) => {
    if (stream.length !== hypotheses.length) {
      throw new Error(
        `bleu: reference stream ${k + 1} has ${stream.length} lines, hypotheses have ${hypotheses.length}`,
      );
    }
  });

  const width = 2 + 2 * r.maxNgramOrder;
  const rows = new Float64Array(hypotheses.length * width);
  for (let i = 0; i < hypotheses.length; i++) {
    const refs: string[] = [];
    for (const stream of references) {
      const ref = stream[i];
      if (ref !== null && ref !== undefined) refs.push(ref);
    }
    // sacreBLEU fails on a segment with no reference at all; say which one
    if (refs.length === 0) throw new Error(`bleu: segment ${i + 1} has no reference`);
    rows.set(segmentStats(hypotheses[i]!, referenceInfo(refs, r), r), i * width);
  }
  return { width, count: hypotheses.length, rows };
}

/**
 * Corpus BLEU, as `sacrebleu.corpus_bleu` (exp smoothing, no effective order by default).
 *
 * @param hypotheses one detokenised line per segment
 * @param references reference streams: `references[k][i]` is the k-th reference of segment i. A
 *   `null`/`undefined` entry means segment i has fewer references.
 */
export function corpusBleu(
  hypotheses: readonly string[],
  references: readonly (readonly (string | null | undefined)[])[],
  options: BleuOptions = {},
): BleuScore {
  const r = resolve(options, false);
  const { width, count, rows } = segmentRows(hypotheses, references, r);
  const sums = new Array<number>(width).fill(0);
  for (let i = 0; i < count; i++) for (let j = 0; j < width; j++) sums[j]! += rows[i * width + j]!;
  return statsToScore(sums, r);
}

/**
 * Corpus BLEU from summed segment statistics ({@link bleuSegmentStats}'s layout), with corpus BLEU's
 * defaults: sacreBLEU's `_compute_score_from_stats`, which its bootstrap scores each resample with.
 */
export function bleuFromStats(sums: ArrayLike<number>, options: BleuOptions = {}): BleuScore {
  const r = resolve(options, false);
  if (sums.length !== 2 + 2 * r.maxNgramOrder)
    throw new RangeError(
      `bleu: ${sums.length} statistics given; order ${r.maxNgramOrder} needs ${2 + 2 * r.maxNgramOrder}`,
    );
  return statsToScore(Array.from(sums), r);
}

/**
 * Sentence BLEU, as `sacrebleu.sentence_bleu`: exp smoothing and effective order by default.
 * @param references the references of this one sentence
 */
export function sentenceBleu(hypothesis: string, references: readonly string[], options: BleuOptions = {}): BleuScore {
  const r = resolve(options, true);
  if (references.length === 0) throw new Error('bleu: no references given');
  return statsToScore(segmentStats(hypothesis, referenceInfo(references, r), r), r);
}

function statsToScore(stats: readonly number[], r: Resolved): BleuScore {
  const n = r.maxNgramOrder;
  return computeBleu(stats.slice(2, 2 + n), stats.slice(2 + n), stats[0]!, stats[1]!, {
    smoothMethod: r.smoothMethod,
    smoothValue: r.smoothValue,
    effectiveOrder: r.effectiveOrder,
    maxNgramOrder: n,
  });
}

/**
 * sacreBLEU's reproducibility signature, e.g. `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`;
 * the version is the sacreBLEU release frost reproduces ({@link SACREBLEU_VERSION}).
 * @param nrefs references per segment, or 'var' when it varies
 * @param sentence whether the defaults are sentence BLEU's (effective order on)
 */
export function bleuSignature(nrefs: number | 'var', options: BleuOptions = {}, sentence = false): string {
  const r = resolve(options, sentence);
  const smoothDefault = SMOOTH_DEFAULTS[r.smoothMethod];
  const smooth =
    smoothDefault === undefined
      ? r.smoothMethod
      : `${r.smoothMethod}[${formatFixed(r.smoothValue ?? smoothDefault, 2)}]`;
  return [
    `nrefs:${nrefs}`,
    `case:${r.lowercase ? 'lc' : 'mixed'}`,
    `eff:${r.effectiveOrder ? 'yes' : 'no'}`,
    `tok:${options.tokenize ?? '13a'}`,
    `smooth:${smooth}`,
    `version:${SACREBLEU_VERSION}`,
  ].join('|');
}
