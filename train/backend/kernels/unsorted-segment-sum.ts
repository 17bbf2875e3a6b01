/**
 * UnsortedSegmentSum for the wasm backend, which has none (tfjs-backend-wasm 4.22 registers no such
 * kernel, so tf.grad of tf.gather, i.e. of every embedding lookup, throws "Kernel
 * 'UnsortedSegmentSum' not registered for backend 'wasm'").
 *
 * out[s, ...] = Σ_{r : ids[r] = s} x[r, ...] with segmentIds' shape a prefix of x's; ids outside
 * [0, numSegments) are dropped (TensorFlow drops negative ids). One pass scatter-add over the heap
 * views: O(size(x) + numSegments·inner). The tfjs cpu kernel instead builds numSegments masks over
 * all of x, O(numSegments · size(x)) — 6000 segments × a [1280, 256] gradient is 2·10⁹ operations.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { util } from '@tensorflow/tfjs-core';
import { asWasmBackend, numericView } from './wasm-internals.ts';

function scatterAdd(
  x: ArrayLike<number>,
  ids: ArrayLike<number>,
  out: Float32Array | Int32Array,
  numSegments: number,
  inner: number,
): void {
  out.fill(0);
  const rows = ids.length;
  for (let r = 0; r < rows; r++) {
    const s = Math.trunc(ids[r]);
    if (!(s >= 0 && s < numSegments)) continue;
    const dst = s * inner;
    const src = r * inner;
    for (let j = 0; j < inner; j++) out[dst + j] += x[src + j];
  }
}

export const unsortedSegmentSum: KernelFunc = ({ inputs, backend: anyBackend, attrs }) => {
  const backend = asWasmBackend(anyBackend);
  const x = inputs.x as TensorInfo;
  const segmentIds = inputs.segmentIds as TensorInfo;
  const numSegments = Number((attrs as { numSegments: number }).numSegments);
  util.assert(
    Number.isInteger(numSegments) && numSegments >= 0,
    () => `UnsortedSegmentSum: bad numSegments ${numSegments}`,
  );
  const idRank = segmentIds.shape.length;
  util.assert(
    idRank <= x.shape.length && segmentIds.shape.every((n, i) => n === x.shape[i]),
    () => `UnsortedSegmentSum: segmentIds shape ${segmentIds.shape} must be a prefix of x shape ${x.shape}`,
  );
  if (x.dtype !== 'float32' && x.dtype !== 'int32') {
    throw new Error(`UnsortedSegmentSum on wasm: unsupported dtype ${x.dtype}`);
  }
  const innerShape = x.shape.slice(idRank);
  const inner = util.sizeFromShape(innerShape);
  const out = backend.makeOutput([numSegments, ...innerShape], x.dtype);
  // Views only after makeOutput, which may grow the heap.
  const xs = numericView(backend, x);
  const ids = numericView(backend, segmentIds);
  const dst = numericView(backend, out) as Float32Array | Int32Array;
  scatterAdd(xs, ids, dst, numSegments, inner);
  return out;
};
