import type * as tf from '@tensorflow/tfjs-core';
import type { TensorValue } from '../core/onnx/graph-builder.ts';

/** A float32 tfjs tensor as an ONNX initializer value (reads it synchronously: export-time only). */
export function tensorValue(t: tf.Tensor): TensorValue {
  return { dtype: 'float32', dims: [...t.shape], data: t.dataSync() as Float32Array };
}

/** The transpose of a row-major [rows, cols] float32 matrix, for initializers stored the other way round. */
export function transposed(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return out;
}
