import { spearman } from '../core/metrics/spearman.ts';
import { cosineSimilarity, rowNorms } from '../core/metrics/vector-similarity.ts';
import { SPECIALS, type Vocabulary } from '../core/vocab.ts';
import type { TargetMatrix } from '../models/index.ts';
import type { MatrixAnalysis } from './schema.ts';
import type { WordPair } from './word-pairs.ts';

/** Points drawn in a norm-frequency scatter: enough to show the shape, few enough for a light page. */
const MAX_SCATTER_POINTS = 400;

/** The first id after the specials: those are not words and have no training frequency of their own. */
const FIRST_WORD = Math.max(...Object.values(SPECIALS).map((s) => s.id)) + 1;

/**
 * `count` indices spread evenly over 0..n-1 (all of them when n ≤ count), so a sample of words
 * sorted by frequency keeps the frequency distribution's shape.
 */
export function evenSample(n: number, count: number): number[] {
  if (n <= count) return Array.from({ length: n }, (_, i) => i);
  return Array.from({ length: count }, (_, k) => Math.round((k * (n - 1)) / (count - 1)));
}

/**
 * The paper's Figure 2 analysis (Spearman ρ of ‖w_j‖ and training frequency over every word) and
 * the cosine similarity of word pairs, for one head's target vectors.
 */
export function analyseMatrix(m: TargetMatrix, vocab: Vocabulary, pairs: readonly WordPair[]): MatrixAnalysis {
  const freqs = vocab.frequencies;
  if (!freqs) throw new Error('the target vocabulary has no training frequencies (vocab.tgt.json predates them)');
  const rowOf = matrixRows(m, vocab.size);
  // Five significant digits: float32 rounding makes a unit-norm row 0.99999994 or 1.0000001, and
  // ranking that noise would report a correlation where all norms are equal by construction.
  const rowNorm = Array.from(rowNorms(m.data, m.rows, m.dim), (n) => Number(n.toPrecision(5)));
  // The words with a target vector: every id, or a compact output layer's kept ones.
  const ids = Array.from({ length: vocab.size - FIRST_WORD }, (_, i) => i + FIRST_WORD).filter((j) => rowOf[j]! >= 0);
  const norm = (j: number) => rowNorm[rowOf[j]!]!;
  const rho =
    ids.length >= 2
      ? spearman(
          ids.map((j) => freqs[j]!),
          ids.map(norm),
        )
      : NaN;
  const byFreq = [...ids].sort((a, b) => freqs[a]! - freqs[b]! || a - b);
  const points = evenSample(byFreq.length, MAX_SCATTER_POINTS).map((k) => {
    const j = byFreq[k]!;
    return { freq: freqs[j]!, norm: norm(j) };
  });
  const row = (j: number) => (rowOf[j]! < 0 ? undefined : m.data.subarray(rowOf[j]! * m.dim, (rowOf[j]! + 1) * m.dim));
  return {
    kind: m.kind,
    description: m.description,
    words: ids.length,
    dim: m.dim,
    spearman: Number.isNaN(rho) ? null : rho,
    points,
    pairs: pairs.map(({ a, b, related }) => {
      const [ta, tb] = [asToken(vocab, a), asToken(vocab, b)];
      const [ra, rb] = [
        ta === undefined ? undefined : row(vocab.id(ta)),
        tb === undefined ? undefined : row(vocab.id(tb)),
      ];
      const cos = ra !== undefined && rb !== undefined ? cosineSimilarity(ra, rb) : NaN;
      return { a, b, related, cosine: Number.isNaN(cos) ? null : cos };
    }),
  };
}

/**
 * The row of each vocabulary id in `m` (-1 for an id without one): row j is id j, or, for a compact output
 * layer's matrix, row k is id `m.ids[k]`.
 */
function matrixRows(m: TargetMatrix, V: number): Int32Array {
  if (m.ids === undefined) {
    if (m.rows !== V) throw new Error(`the target matrix has ${m.rows} rows, the vocabulary ${V} words`);
    return Int32Array.from({ length: V }, (_, j) => j);
  }
  if (m.ids.length !== m.rows) throw new Error(`the target matrix has ${m.rows} rows but ${m.ids.length} row ids`);
  const out = new Int32Array(V).fill(-1);
  for (const [k, id] of m.ids.entries()) {
    if (id < 0 || id >= V) throw new Error(`the target matrix's row ${k} is id ${id}, outside the vocabulary of ${V}`);
    out[id] = k;
  }
  return out;
}

/** A word's token: itself in a word vocabulary, its word-initial piece (`▁dog`) in a subword one; else undefined. */
function asToken(vocab: Vocabulary, word: string): string | undefined {
  if (vocab.has(word)) return word;
  return vocab.has(`\u2581${word}`) ? `\u2581${word}` : undefined;
}
