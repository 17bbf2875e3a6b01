/**
 * The `hadamard` head's scores as structured ONNX ops instead of a stored [|V|, d] matrix:
 * scatter f into an n-long vector at the head's columns, transform it by H_n as a product of small
 * Sylvester factors, keep the first |V| outputs. The file stores only the d column numbers (int32);
 * everything else is generated in the graph from constants and folded by onnxruntime at session
 * creation.
 *
 * Why this computes the same scores: scores_i = Σ_k H_n[i, cols[k]] f_k = Σ_j H_n[i, j] v_j with
 * v = f scattered to the columns (zero elsewhere), i.e. scores = (H_n v)_{0..|V|-1}, and H_n is
 * symmetric so v H_n = (H_n v)ᵀ.
 *
 * Why Kronecker factors rather than log2(n) butterfly stages: measured in onnxruntime-node 1.30
 * (|V| = 6000, d = 512, n = 8192, one thread), 13 stages of Split/Add/Sub/Concat move the whole
 * [N, n] tensor ~50 times and ran 2-3x slower than the dense Gemm at batch 64, while a few small
 * GEMMs run on MLAS's fast path. Factor size trades multiply-adds (n·Σa per row, against |V|·d for
 * the dense Gemm) against the overhead of batched small GEMMs: factors ≤ 32 (32·16·16 for n = 8192)
 * beat ≤ 128 (128·64: 1.8x faster than dense at batch 64, against 2.5x) and ≤ 16 (16·8·8·8: 1.3x).
 * bench/hadamard-head.ts measures it.
 */
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';

/** Largest Sylvester factor the transform multiplies by (a power of two). */
const MAX_FACTOR = 32;

/** The rows of H_n that the head scores against, restricted to the head's columns. */
export interface HadamardScoresSpec {
  /** |V|: how many rows (scores) to produce, ≤ order. */
  rows: number;
  /** n, a power of two. */
  order: number;
  /** The d distinct columns of H_n, each in [0, n). */
  columns: Int32Array;
  /** Largest Kronecker factor (a power of two); see {@link hadamardFactors}. @default MAX_FACTOR */
  maxFactor?: number;
}

/**
 * Splits n = 2^k into the fewest power-of-two factors ≤ MAX_FACTOR, as even as possible, largest
 * first (the leading factor is the one whose rows get trimmed to |V|).
 */
export function hadamardFactors(order: number, maxFactor = MAX_FACTOR): number[] {
  const k = Math.log2(order);
  if (!Number.isInteger(k) || k < 0) throw new RangeError(`Hadamard order must be a power of two, got ${order}`);
  const maxBits = Math.log2(maxFactor);
  if (!Number.isInteger(maxBits) || maxBits < 1)
    throw new RangeError(`maxFactor must be a power of two >= 2, got ${maxFactor}`);
  const parts = Math.max(1, Math.ceil(k / maxBits));
  const sizes: number[] = [];
  let left = k;
  for (let p = parts; p > 0; p--) {
    const e = Math.ceil(left / p);
    sizes.push(2 ** e);
    left -= e;
  }
  return sizes;
}

/**
 * Emits the Sylvester matrix H_m (float32 [m, m], m a power of two) from a single 1 by doubling:
 * H_2m = [[H_m, H_m], [H_m, -H_m]]. Every input is a constant, so onnxruntime folds it.
 */
function sylvesterOnnx(g: GraphBuilder, m: number): string {
  let h = g.constFloat([1], [1, 1], 'h1');
  for (let size = 1; size < m; size *= 2) {
    // H_2m = [[H, H], [H, -H]]
    const top = g.op('Concat', [h, h], { axis: 1 });
    const bottom = g.op('Concat', [h, g.op('Neg', [h])], { axis: 1 });
    h = g.op('Concat', [top, bottom], { axis: 0 });
  }
  return h;
}

/**
 * Emits scores [N, rows] with scores_i = Σ_k H_n[i, columns[k]] x_k for a float32 [N, d] value `x`;
 * returns its name.
 */
export function hadamardScoresOnnx(g: GraphBuilder, x: string, spec: HadamardScoresSpec): string {
  const { rows, order: n, columns } = spec;
  const d = columns.length;
  if (rows < 1 || rows > n) throw new RangeError(`rows (${rows}) must be in [1, ${n}]`);
  if (columns.some((c) => c < 0 || c >= n) || new Set(columns).size !== d) {
    throw new RangeError(`columns must be ${d} distinct values in [0, ${n})`);
  }
  const factors = hadamardFactors(n, spec.maxFactor);
  const m = factors.length;
  // H_a for every factor a: the largest is built, the others are its top-left blocks (Sylvester's
  // H_a is the top-left a x a block of H_b for a ≤ b).
  const largest = Math.max(...factors);
  const hLargest = sylvesterOnnx(g, largest);
  const blocks = new Map<number, string>([[largest, hLargest]]);
  const hadamard = (a: number): string => {
    let h = blocks.get(a);
    if (h === undefined) blocks.set(a, (h = g.slice(hLargest, [0, 0], [a, a], [0, 1])));
    return h;
  };

  // idx[j] = k where columns[k] = j, else d   (the scatter's index table, n long; folded)
  const cols = g.initializer('columns', { dtype: 'int32', dims: [d], data: columns });
  const fill = g.op('Expand', [g.constInt64(d, [], 'unused'), g.constInt64([n], [1], 'order')]);
  const ks = g.op('Range', [g.constInt64(0, [], 'start'), g.constInt64(d, [], 'd'), g.constInt64(1, [], 'delta')]);
  const idx = g.op('ScatterElements', [fill, cols, ks], { axis: 0 });
  // z = [xᵀ; 0]   [d+1, N]: row d is the zero that every unused column reads
  const z = g.op('Pad', [g.op('Transpose', [x], { perm: [1, 0] }), g.constInt64([0, 0, 1, 0], [4], 'pads')]);
  // v = (z[idx])ᵀ   [N, n]: v_j = x_k where j = columns[k], else 0.
  // Gathering whole rows then transposing once is far faster in onnxruntime than gathering single
  // elements along axis 1 (measured 0.3 ms against 4 ms at N = 64, n = 8192).
  let y = g.op('Transpose', [g.op('Gather', [z, idx], { axis: 0 })], { perm: [1, 0] });

  // H_n = H_a1 ⊗ H_a2 ⊗ … ⊗ H_am (Sylvester's (-1)^popcount(i & j) splits over groups of bits), so
  // with v as [N, a1, …, am] each factor multiplies its own axis, last axis first.
  for (let p = m - 1; p >= 0; p--) {
    const a = factors[p]!;
    const trailing = factors.slice(p + 1).reduce((s, v) => s * v, 1);
    let h = hadamard(a);
    // The leading factor sets the output's top index: only the first ceil(rows / trailing) values
    // of it hold scores i < rows, so its other rows (or columns) are never computed.
    const keep = p === 0 ? Math.ceil(rows / trailing) : a;
    if (trailing === 1) {
      // y = v · H_a[:, :keep] on the last axis: one GEMM [N·…, a]·[a, keep] (H symmetric)
      if (keep < a) h = g.slice(h, [0], [keep], [1]);
      y = g.op('MatMul', [g.op('Reshape', [y, g.constInt64([-1, a], [2], 'shape')]), h]);
    } else {
      // y = H_a[:keep] · y on this axis: batched GEMMs [keep, a]·[a, trailing]
      if (keep < a) h = g.slice(h, [0], [keep], [0]);
      y = g.op('MatMul', [h, g.op('Reshape', [y, g.constInt64([-1, a, trailing], [3], 'shape')])]);
    }
  }
  // scores = y[:, :rows]
  const flat = g.op('Reshape', [y, g.constInt64([0, -1], [2], 'shape')]);
  const computed = Math.ceil(rows / factors.slice(1).reduce((s, v) => s * v, 1)) * (n / factors[0]!);
  return computed === rows ? flat : g.slice(flat, [0], [rows], [1]);
}
