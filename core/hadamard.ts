/* eslint-disable no-bitwise -- Hadamard entries are parities of bitwise ANDs. */
import { SeededRandom } from './random.ts';

/**
 * Sylvester Hadamard maths for the `hadamard` output head (Hoffer et al., "Fix your classifier").
 * H_n[i][j] = (-1)^popcount(i & j), n a power of two, so no matrix ever needs to be stored.
 */

/** n = 2^ceil(log2 max(rows, cols)). */
export function hadamardOrder(rows: number, cols: number): number {
  let n = 1;
  while (n < Math.max(rows, cols)) n *= 2;
  return n;
}

export function hadamardEntry(i: number, j: number): 1 | -1 {
  let x = i & j;
  x ^= x >>> 16;
  x ^= x >>> 8;
  x ^= x >>> 4;
  x ^= x >>> 2;
  x ^= x >>> 1;
  return x & 1 ? -1 : 1;
}

/**
 * Chooses the d columns of H_n that the head keeps.
 *
 * Porting note: Hoffer et al. keep the first d columns, which is fine for |V| <= d. For |V| > d the
 * rows restricted to columns 0..d-1 repeat with period d, so only d words would be distinguishable.
 * We keep every single-bit column (1, 2, 4, ..., n/2): on those, row i reads out the bits of i, so all
 * n rows are distinct. The remaining d - log2(n) columns are a seeded choice among the others,
 * skipping column 0 (all ones, it carries no information about the word).
 */
export function chooseHadamardColumns(n: number, d: number, seed: number): Int32Array {
  const bits = Math.log2(n);
  if (!Number.isInteger(bits)) throw new RangeError(`'n' must be a power of two, got ${n}`);
  if (d < bits) throw new RangeError(`'d' (${d}) must be at least log2(n) = ${bits} for distinct rows`);
  if (d > n) throw new RangeError(`'d' (${d}) must not exceed n (${n})`);
  const chosen: number[] = [];
  const taken = new Set<number>();
  for (let b = 0; b < bits; b++) {
    chosen.push(1 << b);
    taken.add(1 << b);
  }
  const others: number[] = [];
  for (let j = 1; j < n; j++) if (!taken.has(j)) others.push(j);
  new SeededRandom(seed, 'hadamard-columns').shuffle(others);
  if (d > n - 1) others.push(0);
  for (const j of others) {
    if (chosen.length >= d) break;
    chosen.push(j);
  }
  return Int32Array.from(chosen);
}

/** The [rows, cols.length] matrix of ±1 entries H_n[i][cols[k]], row-major. */
export function hadamardRows(rows: number, cols: Int32Array): Float32Array {
  const d = cols.length;
  const out = new Float32Array(rows * d);
  for (let i = 0; i < rows; i++) for (let k = 0; k < d; k++) out[i * d + k] = hadamardEntry(i, cols[k]);
  return out;
}

/** In-place fast Walsh-Hadamard transform of x (length n, a power of two): x <- H_n x, unnormalised. */
export function fwht(x: Float32Array | Float64Array): void {
  const n = x.length;
  for (let h = 1; h < n; h *= 2) {
    for (let i = 0; i < n; i += 2 * h) {
      for (let j = i; j < i + h; j++) {
        const a = x[j];
        const b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
}
