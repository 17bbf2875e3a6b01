/**
 * SentencePiece unigram encoding (google/sentencepiece `src/unigram_model.cc`, `EncodeOptimized`, the encoder
 * spm_encode uses): the segmentation whose pieces' scores (log-probabilities) sum highest, found by Viterbi over
 * the sentence. What must match spm_encode bit for bit, and is tested against it on the whole Multi30k
 * validation set (test/subword-unigram-spm.test.ts):
 *
 * - Scores are float32. A position stores its best path score as a float32, but a candidate through a piece
 *   is compared as the exact (double) sum of that float and the piece's score, as in SentencePiece, where the
 *   piece's score is a double expression; a candidate through an unknown character is summed in float32.
 *   On near-ties this decides the path, so frost does the same (`Math.fround` where SentencePiece rounds).
 * - A position takes the first candidate path that is strictly better: candidates are visited by start
 *   position, then by length, so on an exact tie the path whose last piece is the longest wins.
 * - A character with no one-character piece is a candidate of its own at `min(score) - 10`, SentencePiece's
 *   unknown penalty; when it ends up on the best path it is spelled as its UTF-8 bytes (byte fallback).
 *
 * Porting note: frost caches each word's lattice (the pieces that match it) but runs the Viterbi pass over the
 * whole sentence, carrying the path score from word to word, so the float32 roundings, and with them any
 * near-tie, come out exactly as SentencePiece's sentence-wide pass does. A model with a piece that crosses a
 * word boundary (`spm_train --split_by_whitespace=false`) gets one lattice for the whole sentence, uncached.
 *
 * Isomorphic: no Node APIs.
 */
import { ModelType, PieceType } from './sentencepiece-proto.ts';
import { forEachWord, pushBytes, segmenters, WordCache, type PieceTable, type Segmenter } from './segmenter.ts';

/** SentencePiece's `kUnkPenalty`: an unknown character scores this much below the lowest piece. */
const UNKNOWN_PENALTY = 10;
/** Edge id of an unknown character (spelled as bytes). */
const UNKNOWN = -1;

/** The pieces that match one word: (start, end, id) triples in characters, by start, then by length. */
interface WordLattice {
  readonly chars: readonly string[];
  readonly edges: Int32Array;
}

class UnigramSegmenter implements Segmenter {
  readonly #scores: Float32Array;
  readonly #unknownScore: number;
  readonly #maxPieceChars: number;
  readonly #cache = new WordCache<WordLattice>();
  // Viterbi state, reused across calls and grown to the longest word seen.
  #best = new Float64Array(64);
  #from = new Int32Array(64);
  #id = new Int32Array(64);

  constructor(private readonly table: PieceTable) {
    const scores = new Float32Array(table.pieces.length);
    let min = Infinity;
    let maxChars = 1;
    table.pieces.forEach(({ piece, score, type }, id) => {
      if (!Number.isFinite(score)) throw new Error(`piece ${id} '${piece}' has score ${score}, not a log-probability`);
      scores[id] = score;
      if (type === PieceType.NORMAL) {
        min = Math.min(min, scores[id]!);
        maxChars = Math.max(maxChars, Array.from(piece).length);
      }
    });
    this.#scores = scores;
    this.#unknownScore = Math.fround((Number.isFinite(min) ? min : 0) - UNKNOWN_PENALTY);
    this.#maxPieceChars = maxChars;
  }

  encode(marked: string, out: number[]): void {
    if (!this.table.wordSafe) {
      this.#viterbi(this.#lattice(marked), 0, out);
      return;
    }
    let score = 0;
    forEachWord(marked, (word) => {
      score = this.#viterbi(
        this.#cache.get(word, (w) => this.#lattice(w)),
        score,
        out,
      );
    });
  }

  #lattice(span: string): WordLattice {
    const chars = Array.from(span);
    const { normalIds } = this.table;
    const edges: number[] = [];
    for (let start = 0; start < chars.length; start++) {
      let piece = '';
      let single = false;
      const last = Math.min(chars.length, start + this.#maxPieceChars);
      for (let end = start + 1; end <= last; end++) {
        piece += chars[end - 1]!;
        const id = normalIds.get(piece);
        if (id === undefined) continue;
        edges.push(start, end, id);
        if (end === start + 1) single = true;
      }
      if (!single) edges.push(start, start + 1, UNKNOWN);
    }
    return { chars, edges: Int32Array.from(edges) };
  }

  /**
   * The best path through `lattice` when the path so far scores `prefix`: appends its ids to `out` and returns
   * the path's score at the word's end, rounded as SentencePiece rounds it.
   */
  #viterbi(lattice: WordLattice, prefix: number, out: number[]): number {
    const n = lattice.chars.length;
    if (this.#best.length <= n) {
      const size = 2 * (n + 1);
      this.#best = new Float64Array(size);
      this.#from = new Int32Array(size);
      this.#id = new Int32Array(size);
    }
    const best = this.#best;
    const from = this.#from;
    const ids = this.#id;
    from.fill(-1, 0, n + 1);
    best[0] = prefix;
    const edges = lattice.edges;
    for (let k = 0; k < edges.length; k += 3) {
      const start = edges[k]!;
      const end = edges[k + 1]!;
      const id = edges[k + 2]!;
      // A piece's candidate is a double (SentencePiece's piece score there is a double expression), an unknown
      // character's a float; what is stored and compared against is a float.
      const score = id === UNKNOWN ? Math.fround(this.#unknownScore + best[start]!) : this.#scores[id]! + best[start]!;
      if (from[end] === -1 || score > best[end]!) {
        best[end] = Math.fround(score);
        from[end] = start;
        ids[end] = id;
      }
    }
    const path: number[] = [];
    for (let end = n; end > 0; end = from[end]!) path.push(end);
    for (let k = path.length - 1; k >= 0; k--) {
      const end = path[k]!;
      const id = ids[end]!;
      if (id === UNKNOWN) pushBytes(lattice.chars[end - 1]!, this.table.byteIds, out);
      else out.push(id);
    }
    return best[n]!;
  }
}

segmenters.register('unigram', { modelType: ModelType.UNIGRAM, create: (table) => new UnigramSegmenter(table) });
