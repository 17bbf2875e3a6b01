/**
 * A batch's target side packed by time step, the way PyTorch's PackedSequence packs a sequence:
 * rows sorted by target length, longest first, so the sentences still running at step t are the
 * first counts[t] rows. A teacher-forced decoder then works on those rows only, and its output
 * layer sees real positions only. Batches are bucketed by source length, so 17% of the padded
 * target positions of bench:train's Multi30k batches are padding, and the output layer is 44% of
 * a learned head's GEMM FLOPs (its report). The loss is the same sum over the same positions.
 */
import type { TargetBatch } from './archs/types.ts';

export interface PackedSteps {
  /** order[i] = the batch row that becomes row i (a stable sort, longest target first). */
  readonly order: Int32Array;
  /** counts[t] = rows still running at step t: non-increasing, all > 0. */
  readonly counts: number[];
  /** Σ counts: the packed positions. */
  readonly size: number;
}

/**
 * Packs a [B, T] target mask: a row's length is one past its last unmasked position, so a mask
 * with holes still packs every position it counts (the holes keep their 0 weight).
 */
export function packSteps(mask: Float32Array, B: number, T: number): PackedSteps {
  if (mask.length !== B * T) throw new RangeError(`target mask has ${mask.length} values for a [${B}, ${T}] batch`);
  const lengths = new Int32Array(B);
  for (let b = 0; b < B; b++) {
    let len = T;
    while (len > 0 && mask[b * T + len - 1] === 0) len--;
    lengths[b] = len;
  }
  const order = Int32Array.from(lengths.keys()).sort((x, y) => lengths[y] - lengths[x] || x - y);
  const counts: number[] = [];
  let size = 0;
  for (let t = 0; ; t++) {
    let n = 0;
    while (n < B && lengths[order[n]] > t) n++;
    if (n === 0) break;
    counts.push(n);
    size += n;
  }
  return { order, counts, size };
}

/** Rows of a row-major [B, width] array in `order`. */
export function permuteRows<A extends Int32Array | Float32Array>(x: A, order: Int32Array, width: number): A {
  if (x.length !== order.length * width)
    throw new RangeError(`${x.length} values are not ${order.length} rows of ${width}`);
  const out = new (x.constructor as new (n: number) => A)(x.length);
  for (let i = 0; i < order.length; i++) out.set(x.subarray(order[i] * width, (order[i] + 1) * width), i * width);
  return out;
}

/**
 * A [B, T] row-major target array (rows in the batch's own order) → its packed positions, time
 * major: step 0's rows, then step 1's, … each in `order`.
 */
export function packTimeMajor<A extends Int32Array | Float32Array>(x: A, steps: PackedSteps, T: number): A {
  if (x.length !== steps.order.length * T)
    throw new RangeError(`${x.length} values are not ${steps.order.length} rows of ${T}`);
  const out = new (x.constructor as new (n: number) => A)(steps.size);
  let k = 0;
  steps.counts.forEach((n, t) => {
    for (let i = 0; i < n; i++) out[k++] = x[steps.order[i] * T + t];
  });
  return out;
}

/** A batch's target side packed: the step structure, and the teacher-forced inputs, targets and their weights. */
export interface PackedTargets {
  readonly steps: PackedSteps;
  /** Packed positions, time-major (packTimeMajor). */
  readonly inputs: Int32Array;
  readonly targets: Int32Array;
  readonly mask: Float32Array;
}

/** Packs a batch's targets; the caller puts its own per-row arrays (sources, image rows) in steps.order. */
export function packTargets(batch: TargetBatch): PackedTargets {
  const steps = packSteps(batch.tgtMask, batch.B, batch.T);
  return {
    steps,
    inputs: packTimeMajor(batch.tgtIn, steps, batch.T),
    targets: packTimeMajor(batch.tgtOut, steps, batch.T),
    mask: packTimeMajor(batch.tgtMask, steps, batch.T),
  };
}
