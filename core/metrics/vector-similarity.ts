/**
 * Norms and cosine similarity of rows of a row-major matrix, for the output-matrix analyses of
 * reports (target-vector norms, similarity of word pairs).
 *
 * Isomorphic: no Node APIs.
 */

/** L2 norm of each row of a row-major [rows, cols] matrix. */
export function rowNorms(matrix: ArrayLike<number>, rows: number, cols: number): Float64Array {
  if (matrix.length !== rows * cols) throw new RangeError(`rowNorms: ${matrix.length} values is not ${rows} x ${cols}`);
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let c = r * cols; c < (r + 1) * cols; c++) s += matrix[c] * matrix[c];
    out[r] = Math.sqrt(s);
  }
  return out;
}

/**
 * cos(a, b) = a·b / (‖a‖ ‖b‖). NaN when either vector is zero (no direction to compare).
 * @throws RangeError when the lengths differ
 */
export function cosineSimilarity(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new RangeError(`cosineSimilarity: a has ${a.length} values, b has ${b.length}`);
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  if (aa === 0 || bb === 0) return NaN;
  return Math.max(-1, Math.min(1, dot / Math.sqrt(aa * bb)));
}
