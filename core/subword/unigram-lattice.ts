/**
 * The unigram trainer's view of the corpus: every distinct training word with the candidate pieces that match it
 * (its lattice), built once from the seed vocabulary and narrowed as pieces are pruned, so EM never looks a
 * string up again. Gives per word the forward-backward expected piece counts (the E step), the Viterbi path
 * (what pruning counts) and, per piece, its best segmentation without itself (what it would be replaced by).
 *
 * Log-probabilities are float64 here; only the finished model's scores are float32 (its encoder sums them as
 * SentencePiece does).
 *
 * Isomorphic: no Node APIs.
 */

/** Edge piece of a character no piece covers (not in the vocabulary: left to byte fallback). */
export const UNCOVERED = -1;
/** Log-probability of an uncovered character: on every path through its word, so its value cancels. */
const UNCOVERED_LOG_PROB = -1e3;

function logAdd(a: number, b: number): number {
  if (a === -Infinity) return b;
  if (b === -Infinity) return a;
  return a > b ? a + Math.log1p(Math.exp(b - a)) : b + Math.log1p(Math.exp(a - b));
}

export class TrainingLattice {
  /** Occurrences of each word. */
  readonly counts: Float64Array;
  /** Characters of each word. */
  readonly lengths: Int32Array;
  /** Edges of word w are [offsets[w], offsets[w + 1]) in the three edge arrays, by start, then by end. */
  #offsets: Int32Array;
  #starts: Int32Array;
  #ends: Int32Array;
  #pieces: Int32Array;
  // Per-position work arrays, sized for the longest word.
  readonly #alpha: Float64Array;
  readonly #beta: Float64Array;
  readonly #from: Int32Array;
  readonly #via: Int32Array;

  /**
   * @param words each word's characters and count
   * @param pieceOf the candidate piece a string is, or undefined
   * @param maxPieceLength longest candidate, in characters
   */
  constructor(
    words: readonly { chars: readonly string[]; count: number }[],
    pieceOf: (piece: string) => number | undefined,
    maxPieceLength: number,
  ) {
    this.counts = Float64Array.from(words, (w) => w.count);
    this.lengths = Int32Array.from(words, (w) => w.chars.length);
    const offsets = new Int32Array(words.length + 1);
    const starts: number[] = [];
    const ends: number[] = [];
    const pieces: number[] = [];
    words.forEach(({ chars }, w) => {
      for (let start = 0; start < chars.length; start++) {
        let text = '';
        let covered = false;
        for (let end = start + 1; end <= Math.min(chars.length, start + maxPieceLength); end++) {
          text += chars[end - 1]!;
          const piece = pieceOf(text);
          if (piece === undefined) continue;
          starts.push(start);
          ends.push(end);
          pieces.push(piece);
          if (end === start + 1) covered = true;
        }
        if (!covered) {
          starts.push(start);
          ends.push(start + 1);
          pieces.push(UNCOVERED);
        }
      }
      offsets[w + 1] = starts.length;
    });
    this.#offsets = offsets;
    this.#starts = Int32Array.from(starts);
    this.#ends = Int32Array.from(ends);
    this.#pieces = Int32Array.from(pieces);
    const longest = this.lengths.reduce((max, n) => Math.max(max, n), 0) + 1;
    this.#alpha = new Float64Array(longest);
    this.#beta = new Float64Array(longest);
    this.#from = new Int32Array(longest);
    this.#via = new Int32Array(longest);
  }

  get wordCount(): number {
    return this.counts.length;
  }

  get edgeCount(): number {
    return this.#pieces.length;
  }

  /** Drops the edges of pieces that `alive` says are gone, so later passes skip them for free. */
  compact(alive: (piece: number) => boolean): void {
    const keep = (k: number): boolean => this.#pieces[k] === UNCOVERED || alive(this.#pieces[k]!);
    const offsets = new Int32Array(this.#offsets.length);
    let n = 0;
    for (let w = 0; w < this.wordCount; w++) {
      for (let k = this.#offsets[w]!; k < this.#offsets[w + 1]!; k++) if (keep(k)) n++;
      offsets[w + 1] = n;
    }
    const starts = new Int32Array(n);
    const ends = new Int32Array(n);
    const pieces = new Int32Array(n);
    let j = 0;
    for (let k = 0; k < this.#pieces.length; k++) {
      if (!keep(k)) continue;
      starts[j] = this.#starts[k]!;
      ends[j] = this.#ends[k]!;
      pieces[j++] = this.#pieces[k]!;
    }
    this.#offsets = offsets;
    this.#starts = starts;
    this.#ends = ends;
    this.#pieces = pieces;
  }

  /**
   * The E step for one word: adds count × P(piece occurrence | word) to `expected` for every edge, and returns
   * the word's log-likelihood (log of the sum over its segmentations).
   */
  expect(w: number, logProb: Float64Array, expected: Float64Array): number {
    const n = this.lengths[w]!;
    const lo = this.#offsets[w]!;
    const hi = this.#offsets[w + 1]!;
    const alpha = this.#alpha;
    const beta = this.#beta;
    const lp = (piece: number): number => (piece === UNCOVERED ? UNCOVERED_LOG_PROB : logProb[piece]!);
    alpha.fill(-Infinity, 0, n + 1);
    beta.fill(-Infinity, 0, n + 1);
    alpha[0] = 0;
    beta[n] = 0;
    for (let k = lo; k < hi; k++) {
      const end = this.#ends[k]!;
      alpha[end] = logAdd(alpha[end]!, alpha[this.#starts[k]!]! + lp(this.#pieces[k]!));
    }
    for (let k = hi - 1; k >= lo; k--) {
      const start = this.#starts[k]!;
      beta[start] = logAdd(beta[start]!, beta[this.#ends[k]!]! + lp(this.#pieces[k]!));
    }
    const z = alpha[n]!;
    const count = this.counts[w]!;
    for (let k = lo; k < hi; k++) {
      const piece = this.#pieces[k]!;
      if (piece === UNCOVERED) continue;
      expected[piece] += count * Math.exp(alpha[this.#starts[k]!]! + logProb[piece]! + beta[this.#ends[k]!]! - z);
    }
    return z;
  }

  /** The pieces of word w's best segmentation (uncovered characters left out). */
  viterbi(w: number, logProb: Float64Array): number[] {
    return this.#best(w, 0, this.lengths[w]!, -2, logProb).pieces;
  }

  /**
   * The best segmentation of characters [start, end) of word w that does not use piece `without`: what that
   * piece's occurrences become when it is removed. `pieces` is empty when there is none.
   */
  bestWithout(
    w: number,
    start: number,
    end: number,
    without: number,
    logProb: Float64Array,
  ): { score: number; pieces: number[] } {
    return this.#best(w, start, end, without, logProb);
  }

  #best(
    w: number,
    start: number,
    end: number,
    without: number,
    logProb: Float64Array,
  ): { score: number; pieces: number[] } {
    const best = this.#alpha;
    const from = this.#from;
    const via = this.#via;
    best.fill(-Infinity, start, end + 1);
    best[start] = 0;
    for (let k = this.#offsets[w]!; k < this.#offsets[w + 1]!; k++) {
      const s = this.#starts[k]!;
      if (s < start) continue;
      if (s >= end) break;
      const e = this.#ends[k]!;
      const piece = this.#pieces[k]!;
      if (e > end || piece === without) continue;
      const score = best[s]! + (piece === UNCOVERED ? UNCOVERED_LOG_PROB : logProb[piece]!);
      if (score > best[e]!) {
        best[e] = score;
        from[e] = s;
        via[e] = piece;
      }
    }
    const score = best[end]!;
    const pieces: number[] = [];
    if (score === -Infinity) return { score, pieces };
    for (let at = end; at > start; at = from[at]!) if (via[at] !== UNCOVERED) pieces.push(via[at]!);
    return { score, pieces: pieces.reverse() };
  }
}
