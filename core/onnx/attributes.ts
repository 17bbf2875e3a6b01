/**
 * Turning JS attribute values into AttributeProtos.
 *
 * JS has one number type but ONNX attributes are either INT or FLOAT, and
 * onnxruntime rejects the wrong one (`epsilon: 1` sent as INT fails to load).
 * So plain numbers are typed by value *and* by key: integers are INT unless
 * the attribute is one that ONNX defines as a float (FLOAT_ATTRS). Anything
 * else can be forced with `{ int }`, `{ float }`, `{ ints }`, `{ floats }`,
 * `{ strings }` wrappers.
 */
import { AttributeType, type AttributeProtoObject, type GraphProtoObject } from './proto.ts';
import { encodeTensor, isTensorValue } from './tensor.ts';
import type { AttrValue } from './types.ts';

/** Scalar attributes that ONNX operators define as FLOAT (so `alpha: 1` is written as 1.0). */
const FLOAT_ATTRS: ReadonlySet<string> = new Set([
  'alpha', // Elu, LeakyRelu, Selu, HardSigmoid, Gemm, LRN, Celu, ThresholdedRelu
  'beta', // Gemm, HardSigmoid, LRN
  'gamma', // Selu
  'epsilon', // BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization
  'momentum', // BatchNormalization
  'clip', // RNN, GRU, LSTM cell clip
  'value_float', // Constant
  'lambd', // Shrink
  'bias', // Shrink
  'seed', // RandomNormal, RandomUniform, Bernoulli, Multinomial
  'mean', // RandomNormal(Like)
  'scale', // RandomNormal(Like), ImageScaler
  'low', // RandomUniform(Like)
  'high', // RandomUniform(Like)
  'min', // Clip-1/6
  'max', // Clip-1/6
  'spatial_scale', // RoiAlign, MaxRoiPool
  'extrapolation_value', // Resize, CropAndResize
  'cubic_coeff_a', // Resize
  'ratio', // Dropout-1..10
]);

/** List attributes that ONNX operators define as FLOATS. */
const FLOAT_LIST_ATTRS: ReadonlySet<string> = new Set([
  'activation_alpha', // RNN, GRU, LSTM
  'activation_beta', // RNN, GRU, LSTM
  'value_floats', // Constant
  'scales', // Upsample-7
]);

/** List attributes that ONNX operators define as STRINGS (for typing an empty list). */
const STRING_LIST_ATTRS: ReadonlySet<string> = new Set(['activations', 'value_strings']);

/** Something that can be serialised as a subgraph (a GraphBuilder). */
export interface GraphSource {
  toGraphProto(): GraphProtoObject;
}

const utf8 = new TextEncoder();

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

function checkNumbers(name: string, values: ArrayLike<number>): void {
  for (let i = 0; i < values.length; i++) {
    if (typeof values[i] !== 'number' || Number.isNaN(values[i])) {
      throw new Error(`attribute '${name}': ${String(values[i])} is not a number`);
    }
  }
}

function checkInts(name: string, values: readonly number[]): number[] {
  for (const v of values) {
    if (!Number.isSafeInteger(v)) throw new Error(`attribute '${name}': ${v} is not an integer`);
  }
  return [...values];
}

/** Encodes one attribute; throws on values it cannot type. */
export function encodeAttribute(name: string, value: AttrValue): AttributeProtoObject {
  if (typeof value === 'number') {
    checkNumbers(name, [value]);
    if (Number.isInteger(value) && !FLOAT_ATTRS.has(name)) return { name, type: AttributeType.INT, i: value };
    return { name, type: AttributeType.FLOAT, f: value };
  }
  if (typeof value === 'string') return { name, type: AttributeType.STRING, s: utf8.encode(value) };
  if (value instanceof Float32Array) return { name, type: AttributeType.FLOATS, floats: Array.from(value) };
  if (Array.isArray(value)) {
    if (value.length === 0) {
      if (FLOAT_LIST_ATTRS.has(name)) return { name, type: AttributeType.FLOATS, floats: [] };
      if (STRING_LIST_ATTRS.has(name)) return { name, type: AttributeType.STRINGS, strings: [] };
      return { name, type: AttributeType.INTS, ints: [] };
    }
    if (value.every((v): v is string => typeof v === 'string')) {
      return { name, type: AttributeType.STRINGS, strings: value.map((v) => utf8.encode(v)) };
    }
    const numbers = value as number[];
    checkNumbers(name, numbers);
    if (numbers.every((v) => Number.isInteger(v)) && !FLOAT_LIST_ATTRS.has(name)) {
      return { name, type: AttributeType.INTS, ints: checkInts(name, numbers) };
    }
    return { name, type: AttributeType.FLOATS, floats: [...numbers] };
  }
  if (isObject(value)) {
    if ('graph' in value) {
      const graph = value.graph as unknown;
      if (!isObject(graph) || typeof graph.toGraphProto !== 'function') {
        throw new Error(`attribute '${name}': { graph } must hold a GraphBuilder`);
      }
      return { name, type: AttributeType.GRAPH, g: (graph as unknown as GraphSource).toGraphProto() };
    }
    if ('int' in value) return { name, type: AttributeType.INT, i: checkInts(name, [value.int as number])[0]! };
    if ('float' in value) {
      checkNumbers(name, [value.float as number]);
      return { name, type: AttributeType.FLOAT, f: value.float as number };
    }
    if ('ints' in value) return { name, type: AttributeType.INTS, ints: checkInts(name, value.ints as number[]) };
    if ('floats' in value) {
      const floats = Array.from(value.floats as ArrayLike<number>);
      checkNumbers(name, floats);
      return { name, type: AttributeType.FLOATS, floats };
    }
    if ('strings' in value) {
      return { name, type: AttributeType.STRINGS, strings: (value.strings as string[]).map((v) => utf8.encode(v)) };
    }
    if (isTensorValue(value)) return { name, type: AttributeType.TENSOR, t: encodeTensor(value) };
  }
  throw new Error(`attribute '${name}': cannot encode value ${String(value)}`);
}
