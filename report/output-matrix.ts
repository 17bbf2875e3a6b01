import type * as tf from '@tensorflow/tfjs-core';
import type { ParamStore } from '../models/params.ts';

/**
 * Where each head keeps its target vectors w_j (one row per word), for the output-matrix analyses.
 * A head not registered here is reported without them, saying so, rather than analysed wrongly.
 */
export interface TargetMatrix {
  kind: 'learned' | 'frozen';
  /** Which tensor the rows come from, for the report. */
  description: string;
  rows: number;
  dim: number;
  /** Row-major [rows, dim]: row j is word j's target vector. */
  data: Float32Array;
}

type Reader = (params: ParamStore) => TargetMatrix;
const readers = new Map<string, Reader>();

export function registerTargetMatrix(head: string, read: Reader): void {
  if (readers.has(head)) throw new Error(`a target-matrix reader for head '${head}' is already registered`);
  readers.set(head, read);
}

/** The head's target vectors, or null when no reader is registered for it. */
export function readTargetMatrix(head: string, params: ParamStore): TargetMatrix | null {
  return readers.get(head)?.(params) ?? null;
}

export function targetMatrixHeads(): string[] {
  return [...readers.keys()];
}

/** Heads keep W as [d, |V|] so training multiplies f W directly; the target vectors are its columns. */
function columns(t: tf.Tensor): { rows: number; dim: number; data: Float32Array } {
  const [dim, rows] = t.shape as [number, number];
  const src = t.dataSync() as Float32Array;
  const data = new Float32Array(rows * dim);
  for (let i = 0; i < dim; i++) for (let j = 0; j < rows; j++) data[j * dim + i] = src[i * rows + j]!;
  return { rows, dim, data };
}

function rowsOf(t: tf.Tensor): { rows: number; dim: number; data: Float32Array } {
  const [rows, dim] = t.shape as [number, number];
  return { rows, dim, data: Float32Array.from(t.dataSync() as Float32Array) };
}

registerTargetMatrix('learned', (p) => ({ kind: 'learned', description: 'the learned output matrix W', ...columns(p.get('head/W')) }));

// Heads that score against the target embedding: E is what they learn. The shared-* heads rescale
// its rows before scoring (to unit norm, for shared-l2), which would hide exactly the norms the
// analysis is about, so the rows are read before that rescaling.
for (const head of ['tied', 'shared-l2', 'shared-sqnorm', 'shared-distance', 'shared-cosine']) {
  registerTargetMatrix(head, (p) => ({ kind: 'learned', description: 'the target embedding E, shared with the output layer', ...rowsOf(p.get('decoder/embedding')) }));
}

registerTargetMatrix('fixed-uniform', (p) => ({ kind: 'frozen', description: 'the frozen uniform random matrix, regenerated from the seed', ...columns(p.get('head/W')) }));
registerTargetMatrix('fixed-l2', (p) => ({ kind: 'frozen', description: 'the frozen unit-norm random matrix, regenerated from the seed', ...columns(p.get('head/W')) }));
registerTargetMatrix('hadamard', (p) => ({ kind: 'frozen', description: 'the frozen Hadamard rows', ...columns(p.get('head/W')) }));
