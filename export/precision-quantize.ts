/**
 * The numeric side of int8 export: float32 weights to int8 with one symmetric scale per row (fp16
 * rounding lives in core/onnx/float16.ts). Pure functions over typed arrays, testable without ONNX.
 */

/** Symmetric int8 range used: ±127, so that 0 is exact and the range is the same both ways. */
export const INT8_MAX = 127;

/** Int8 values and one scale per row: `value ≈ q[r, c] * scales[r]`. */
export interface RowQuantized {
  q: Int8Array;
  scales: Float32Array;
}

/**
 * Quantises a row-major `[rows, cols]` matrix to int8 with a per-row scale `max|row| / limit` (round to nearest;
 * `limit` 127, or int8-compute's 63). Per row rather than per tensor because rows of a weight matrix (one token's
 * embedding, one GRU unit's input weights) differ in magnitude, and one outlier row would otherwise crush the
 * resolution of all the others. An all-zero row gets scale 1 so dequantising stays exact.
 */
export function quantizeRowsInt8(data: Float32Array, rows: number, cols: number, limit = INT8_MAX): RowQuantized {
  if (rows * cols !== data.length) throw new Error(`quantizeRowsInt8: ${data.length} values are not ${rows}×${cols}`);
  const q = new Int8Array(data.length);
  const scales = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    const off = r * cols;
    let max = 0;
    for (let c = 0; c < cols; c++) max = Math.max(max, Math.abs(data[off + c]!));
    if (!Number.isFinite(max)) throw new Error(`quantizeRowsInt8: row ${r} holds a non-finite value`);
    const scale = max === 0 ? 1 : Math.fround(max / limit);
    scales[r] = scale;
    for (let c = 0; c < cols; c++) {
      const v = Math.round(data[off + c]! / scale);
      q[off + c] = v > limit ? limit : v < -limit ? -limit : v;
    }
  }
  return { q, scales };
}

/** The float32 values a {@link RowQuantized} matrix stands for (what DequantizeLinear computes). */
export function dequantizeRows({ q, scales }: RowQuantized, cols: number): Float32Array {
  const out = new Float32Array(q.length);
  for (let i = 0; i < q.length; i++) out[i] = q[i]! * scales[Math.floor(i / cols)]!;
  return out;
}
