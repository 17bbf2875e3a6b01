/**
 * Encoding of {@link TensorValue}s into TensorProto objects.
 *
 * Every tensor is written to `raw_data` (little-endian, as the ONNX spec
 * requires) rather than to the typed `float_data`/`int64_data` fields: it is
 * the compact form (no per-element varints), the one onnxruntime reads fastest,
 * and one code path serves every dtype.
 */
import { assertDType, bytesPerElement, onnxDataType } from './dtype.ts';
import { toFloat16Array } from './float16.ts';
import type { TensorProtoObject } from './proto.ts';
import type { DType, TensorData, TensorValue } from './types.ts';

const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Number of elements of a tensor with these dims (1 for a scalar). */
export function elementCount(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) {
    if (!Number.isInteger(d) || d < 0) throw new Error(`invalid tensor dim ${d} in [${dims.join(', ')}]`);
    n *= d;
  }
  return n;
}

/** True if `v` looks like a TensorValue (used to tell tensors from other attribute objects). */
export function isTensorValue(v: unknown): v is TensorValue {
  return typeof v === 'object' && v !== null && 'dtype' in v && 'dims' in v && 'data' in v;
}

/** Copies a typed array's bytes, byte-swapping each element on big-endian hosts. */
function littleEndianBytes(view: ArrayBufferView & { length: number; BYTES_PER_ELEMENT: number }): Uint8Array {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice();
  const width = view.BYTES_PER_ELEMENT;
  if (HOST_IS_LITTLE_ENDIAN || width === 1) return bytes;
  for (let i = 0; i < bytes.length; i += width) bytes.subarray(i, i + width).reverse();
  return bytes;
}

function mismatch(dtype: DType, data: TensorData): Error {
  return new Error(`tensor data ${data.constructor.name} does not match dtype '${dtype}'`);
}

function toInt64(data: TensorData): BigInt64Array {
  if (data instanceof BigInt64Array) return data;
  if (Array.isArray(data) || data instanceof Int32Array) {
    const out = new BigInt64Array(data.length);
    for (let i = 0; i < data.length; i++) {
      const v = data[i]!;
      if (!Number.isSafeInteger(v)) throw new Error(`int64 tensor value ${v} is not a safe integer`);
      out[i] = BigInt(v);
    }
    return out;
  }
  throw mismatch('int64', data);
}

/** The typed array holding `data` as `dtype`'s elements (converting number[] and fp16 floats). */
function typedArrayFor(
  dtype: DType,
  data: TensorData,
): ArrayBufferView & { length: number; BYTES_PER_ELEMENT: number } {
  const isArray = Array.isArray(data);
  switch (dtype) {
    case 'float32':
      if (isArray) return Float32Array.from(data);
      if (data instanceof Float32Array) return data;
      throw mismatch(dtype, data);
    case 'float16':
      // Uint16Array holds bits already; float values get rounded to half.
      if (data instanceof Uint16Array) return data;
      if (isArray || data instanceof Float32Array) return toFloat16Array(data);
      throw mismatch(dtype, data);
    case 'int64':
      return toInt64(data);
    case 'int32':
      if (isArray) return Int32Array.from(data);
      if (data instanceof Int32Array) return data;
      throw mismatch(dtype, data);
    case 'uint32':
      if (isArray) return Uint32Array.from(data);
      if (data instanceof Uint32Array) return data;
      throw mismatch(dtype, data);
    case 'int8':
      if (isArray) return Int8Array.from(data);
      if (data instanceof Int8Array) return data;
      throw mismatch(dtype, data);
    case 'uint8':
      if (isArray) return Uint8Array.from(data);
      if (data instanceof Uint8Array) return data;
      throw mismatch(dtype, data);
    case 'bool':
      // ONNX stores bools as one byte each, 0 or 1.
      if (isArray || data instanceof Uint8Array) return Uint8Array.from(data as ArrayLike<number>, (v) => (v ? 1 : 0));
      throw mismatch(dtype, data);
  }
}

/** Encodes a tensor as a TensorProto (name optional: attribute tensors have none). */
export function encodeTensor(t: TensorValue, name?: string): TensorProtoObject {
  assertDType(t.dtype);
  const count = elementCount(t.dims);
  const typed = typedArrayFor(t.dtype, t.data);
  if (typed.length !== count) {
    throw new Error(
      `tensor${name ? ` '${name}'` : ''} has ${typed.length} elements but dims [${t.dims.join(', ')}] need ${count}`,
    );
  }
  if (typed.BYTES_PER_ELEMENT !== bytesPerElement(t.dtype)) throw mismatch(t.dtype, t.data);
  return {
    ...(name === undefined ? {} : { name }),
    dims: [...t.dims],
    data_type: onnxDataType(t.dtype),
    raw_data: littleEndianBytes(typed),
  };
}

/** Byte size of an encoded tensor's payload. */
export function tensorBytes(t: TensorProtoObject): number {
  return t.raw_data?.byteLength ?? 0;
}
