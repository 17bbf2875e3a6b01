/** Mapping between frost's {@link DType} names and ONNX's TensorProto.DataType codes. */
import { TensorDataType } from './proto.ts';
import type { DType } from './types.ts';

const CODES: Record<DType, number> = {
  float32: TensorDataType.FLOAT,
  float16: TensorDataType.FLOAT16,
  int64: TensorDataType.INT64,
  int32: TensorDataType.INT32,
  uint32: TensorDataType.UINT32,
  int8: TensorDataType.INT8,
  uint8: TensorDataType.UINT8,
  bool: TensorDataType.BOOL,
};

const BYTES: Record<DType, number> = {
  float32: 4,
  float16: 2,
  int64: 8,
  int32: 4,
  uint32: 4,
  int8: 1,
  uint8: 1,
  bool: 1,
};

/** Throws unless `dtype` is one of the supported names (callers may pass unchecked strings). */
export function assertDType(dtype: string): asserts dtype is DType {
  if (!Object.hasOwn(CODES, dtype)) {
    throw new Error(`unknown dtype '${dtype}' (expected one of ${Object.keys(CODES).join(', ')})`);
  }
}

/** The ONNX TensorProto.DataType code of `dtype`, e.g. for Cast's `to` attribute. */
export function onnxDataType(dtype: DType): number {
  assertDType(dtype);
  return CODES[dtype];
}

/** Bytes per element of `dtype`. */
export function bytesPerElement(dtype: DType): number {
  assertDType(dtype);
  return BYTES[dtype];
}
