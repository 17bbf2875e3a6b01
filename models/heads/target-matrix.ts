import type * as tf from '@tensorflow/tfjs-core';
import type { ParamStore } from '../params.ts';

/** A head's target vectors w_j (one row per word), for the report's output-matrix analyses. */
export interface TargetMatrix {
  kind: 'learned' | 'frozen';
  /** Which tensor the rows come from, for the report. */
  description: string;
  rows: number;
  dim: number;
  /** Row-major [rows, dim]: row j is word j's target vector (word ids[j]'s, with `ids`). */
  data: Float32Array;
  /** A compact output layer's matrix: the vocabulary id of each row (ascending). Absent: row j is id j. */
  ids?: Int32Array;
}

/** How a head reads its target vectors from a built model's parameters (its definition says if they are frozen). */
export type TargetMatrixReader = (params: ParamStore) => Omit<TargetMatrix, 'kind' | 'ids'>;

/** Heads keep W as [d, |V|] so training multiplies f W directly; the target vectors are its columns. */
export function matrixColumns(description: string, name = 'head/W'): TargetMatrixReader {
  return (params) => {
    const t: tf.Tensor = params.get(name);
    const [dim, rows] = t.shape as [number, number];
    const src = t.dataSync() as Float32Array;
    const data = new Float32Array(rows * dim);
    for (let i = 0; i < dim; i++) for (let j = 0; j < rows; j++) data[j * dim + i] = src[i * rows + j]!;
    return { description, rows, dim, data };
  };
}

/**
 * Heads that score against the target embedding: E is what they learn. The shared-* heads rescale
 * its rows before scoring (to unit norm, for shared-l2), which would hide exactly the norms the
 * analysis is about, so the rows are read before that rescaling.
 */
export const sharedEmbeddingRows: TargetMatrixReader = (params) => {
  const t: tf.Tensor = params.get('decoder/embedding');
  const [rows, dim] = t.shape as [number, number];
  return {
    description: 'the target embedding E, shared with the output layer',
    rows,
    dim,
    data: Float32Array.from(t.dataSync() as Float32Array),
  };
};
