/**
 * Public types of frost's ONNX emitter. Kept apart from the builder so that
 * modules which only describe graphs can import them without the protobuf code.
 */
import type { GraphBuilder } from './graph-builder.ts';

/** Element types the emitter can write. */
export type DType = 'float32' | 'float16' | 'int64' | 'int32' | 'uint32' | 'int8' | 'uint8' | 'bool';

/** A tensor dimension: a fixed size, or a string naming a symbolic (dynamic) axis such as "batch". */
export type Dim = number | string;

/** Data of a {@link TensorValue}. For float16, a `Uint16Array` holds IEEE half bits. */
export type TensorData =
  | Float32Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | Uint8Array
  | Int8Array
  | Uint16Array /* fp16 bits */
  | number[];

/**
 * A dense tensor to store as an initializer or a TENSOR attribute.
 *
 * `data` holds `product(dims)` elements in row-major order (a scalar has
 * `dims: []` and one element). A `number[]` is converted to `dtype`; a typed
 * array must be the one that matches `dtype` (`Float32Array` for float32,
 * `BigInt64Array` or `Int32Array` for int64, `Uint8Array` for bool/uint8, ...),
 * except that float16 also takes a `Float32Array` or `number[]` of float
 * values, which are rounded to half (a `Uint16Array` is taken as raw bits).
 */
export interface TensorValue {
  dtype: DType;
  dims: number[];
  data: TensorData;
}

/**
 * Explicitly typed attribute values, for when inference (see {@link AttrValue})
 * would pick the wrong ONNX attribute type.
 */
export type TypedAttr =
  | { int: number }
  | { float: number }
  | { ints: number[] }
  | { floats: number[] | Float32Array }
  | { strings: string[] };

/**
 * An attribute value. Plain values are typed as follows:
 *  - `number`: INT if it is an integer and the key is not a known float
 *    attribute ({@link FLOAT_ATTRS}: alpha, beta, epsilon, ...), otherwise FLOAT.
 *  - `number[]`: INTS if every element is an integer and the key is not a known
 *    float-list attribute ({@link FLOAT_LIST_ATTRS}), otherwise FLOATS.
 *    An empty array is INTS unless the key is a known float/string list.
 *  - `Float32Array`: FLOATS. `string`: STRING. `string[]`: STRINGS.
 *  - a {@link TensorValue}: TENSOR. `{ graph }`: GRAPH (a subgraph body).
 *  - {@link TypedAttr} wrappers force a type: `{ float: 1 }`, `{ int: 1 }`, ...
 */
export type AttrValue =
  number | string | number[] | string[] | Float32Array | TensorValue | { graph: GraphBuilder } | TypedAttr;
