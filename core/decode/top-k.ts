import type { TopCandidates } from './types.ts';
/**
 * Partial selection of the k largest entries of a numeric slice.
 *
 * Beam search calls this once per live row per decoder step over a vocabulary of ~10k entries
 * with k ≈ beam + 1, so it must be O(n) in the common case: a bounded min-heap of the k best seen
 * so far rejects almost every entry with a single comparison against the heap root, and only the
 * final k entries are sorted.
 *
 * Ordering is total and deterministic: larger value first, ties broken by lower index, and NaN
 * ranks as -Infinity (a NaN log-probability means "impossible", never "best").
 */

/**
 * Writes the `min(k, end - start)` largest entries of `values[start, end)` into `outIndices` /
 * `outValues`, sorted descending (ties: lower index first; NaN is reported as -Infinity).
 * Indices are relative to `start`, so with `start = row * vocab` they are token ids.
 * Allocates nothing; the output buffers double as the heap.
 * @returns how many entries were written
 */
export function topKInto(
  values: Float32Array | Float64Array,
  k: number,
  outIndices: Int32Array,
  outValues: Float64Array,
  start = 0,
  end = values.length,
): number {
  if (!(start >= 0 && end <= values.length && start <= end)) {
    throw new RangeError(`topKInto: slice [start=${start}, end=${end}) is outside values (length ${values.length})`);
  }
  const n = end - start;
  const m = k < n ? k : n;
  if (m <= 0) return 0;
  if (outIndices.length < m || outValues.length < m) {
    throw new RangeError(
      `topKInto: outIndices/outValues hold ${Math.min(outIndices.length, outValues.length)} entries, need k=${m}`,
    );
  }
  if (m === 1) {
    const i = argmax(values, start, end);
    const v = values[start + i];
    outIndices[0] = i;
    outValues[0] = v !== v ? -Infinity : v;
    return 1;
  }

  // Min-heap on (value asc, index desc): the root is the worst of the k best so far.
  const fillEnd = start + m;
  for (let i = start; i < fillEnd; i++) {
    const v = values[i];
    siftUp(outIndices, outValues, i - start, i - start, v !== v ? -Infinity : v);
  }
  // The scan is the hot part: one comparison per entry against a cached threshold. NaN fails it,
  // and so do values equal to the threshold: the newcomer has the higher index, so it ranks lower.
  let worst = outValues[0];
  for (let i = fillEnd; i < end; i++) {
    const v = values[i];
    if (v > worst) {
      siftDown(outIndices, outValues, 0, m, i - start, v);
      worst = outValues[0];
    }
  }

  // Heap sort in place: moving the worst to the back each time leaves the best at index 0.
  for (let last = m - 1; last > 0; last--) {
    const idx = outIndices[last];
    const val = outValues[last];
    outIndices[last] = outIndices[0];
    outValues[last] = outValues[0];
    siftDown(outIndices, outValues, 0, last, idx, val);
  }
  return m;
}

/**
 * Allocating convenience over {@link topKInto}: the `min(k, values.length)` largest entries of
 * `values`, sorted descending (ties: lower index first; NaN ranks and reports as -Infinity).
 */
export function topK(values: Float32Array | Float64Array, k: number): { indices: Int32Array; values: Float64Array } {
  if (!Number.isInteger(k) || k < 0) throw new RangeError(`topK: k must be a non-negative integer, got ${k}`);
  const m = Math.min(k, values.length);
  const indices = new Int32Array(m);
  const out = new Float64Array(m);
  topKInto(values, m, indices, out);
  return { indices, values: out };
}

/**
 * Index (relative to `start`) of the largest entry of `values[start, end)`; ties go to the lower
 * index and NaN ranks as -Infinity. When every entry is -Infinity/NaN it returns 0, so callers
 * that care must check the value. The slice must be non-empty.
 */
export function argmax(values: Float32Array | Float64Array, start: number, end: number): number {
  let best = start;
  let bestV = values[start];
  if (bestV !== bestV) bestV = -Infinity;
  for (let i = start + 1; i < end; i++) {
    const v = values[i];
    // NaN fails the comparison, so it can never displace a real value.
    if (v > bestV) {
      bestV = v;
      best = i;
    }
  }
  return best - start;
}

/** True when (va, ia) ranks below (vb, ib): smaller value, or same value and higher index. */
function worse(va: number, ia: number, vb: number, ib: number): boolean {
  return va < vb || (va === vb && ia > ib);
}

/** Places (idx, val) at `pos` and moves it up while it is worse than its parent. */
function siftUp(heapI: Int32Array, heapV: Float64Array, pos: number, idx: number, val: number): void {
  while (pos > 0) {
    const parent = Math.floor((pos - 1) / 2);
    if (!worse(val, idx, heapV[parent], heapI[parent])) break;
    heapI[pos] = heapI[parent];
    heapV[pos] = heapV[parent];
    pos = parent;
  }
  heapI[pos] = idx;
  heapV[pos] = val;
}

/** Places (idx, val) at `pos` of a heap of `size` and moves it down past worse children. */
function siftDown(heapI: Int32Array, heapV: Float64Array, pos: number, size: number, idx: number, val: number): void {
  for (;;) {
    let child = 2 * pos + 1;
    if (child >= size) break;
    const right = child + 1;
    if (right < size && worse(heapV[right], heapI[right], heapV[child], heapI[child])) child = right;
    if (!worse(heapV[child], heapI[child], val, idx)) break;
    heapI[pos] = heapI[child];
    heapV[pos] = heapV[child];
    pos = child;
  }
  heapI[pos] = idx;
  heapV[pos] = val;
}

/**
 * Row `row`'s `count` best candidates that `masked` leaves, from a model's top-k outputs, into `tok` / `val`
 * from `at`: what step() would pick on the processed row. False, having decided nothing, when the candidates
 * cannot tell: a NaN (TopK's order is then undefined), or fewer than `count` finite unmasked ones (the dense
 * rules for rows with nothing possible apply).
 */
export function unmaskedCandidates(
  top: TopCandidates,
  row: number,
  masked: readonly number[],
  count: number,
  tok: Int32Array,
  val: Float32Array | Float64Array,
  at: number,
): boolean {
  let n = 0;
  for (let j = row * top.k, end = j + top.k; j < end && n < count; j++) {
    const v = top.logProbs[j];
    if (v !== v) return false;
    if (masked.includes(top.tokens[j])) continue;
    if (!(v > -Infinity)) return false;
    tok[at + n] = top.tokens[j];
    val[at + n] = v;
    n++;
  }
  return n === count;
}
