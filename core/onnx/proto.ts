/**
 * The ONNX protobuf schema, loaded from the committed JSON descriptor so that
 * no file system is needed (this runs in browsers too). Field names are ONNX's
 * own snake_case ones (`ir_version`, `raw_data`), see gen-proto-json.ts.
 *
 * Caveat for browsers: protobufjs builds its encoders with `new Function`,
 * so a page whose Content-Security-Policy forbids 'unsafe-eval' cannot use it.
 */
import protobuf from 'protobufjs/light.js';
import descriptor from './onnx-proto.json' with { type: 'json' };

const root = protobuf.Root.fromJSON(descriptor as protobuf.INamespace);

/** onnx.ModelProto. */
export const ModelProto: protobuf.Type = root.lookupType('onnx.ModelProto');

/** onnx.TensorProto.DataType codes. */
export const TensorDataType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  BFLOAT16: 16,
} as const;

/** onnx.AttributeProto.AttributeType codes. */
export const AttributeType = {
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  GRAPH: 5,
  FLOATS: 6,
  INTS: 7,
  STRINGS: 8,
  TENSORS: 9,
  GRAPHS: 10,
} as const;

/** Plain-object shapes of the messages the emitter writes (snake_case as in onnx.proto). */
export interface TensorProtoObject {
  name?: string;
  dims: number[];
  data_type: number;
  raw_data?: Uint8Array;
}

export interface AttributeProtoObject {
  name: string;
  type: number;
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: TensorProtoObject;
  g?: GraphProtoObject;
  floats?: number[];
  ints?: number[];
  strings?: Uint8Array[];
}

export interface NodeProtoObject {
  input: string[];
  output: string[];
  name: string;
  op_type: string;
  domain?: string;
  attribute: AttributeProtoObject[];
}

export interface ValueInfoProtoObject {
  name: string;
  type: {
    tensor_type: {
      elem_type: number;
      shape: { dim: Array<{ dim_value: number } | { dim_param: string }> };
    };
  };
}

export interface GraphProtoObject {
  name: string;
  node: NodeProtoObject[];
  initializer: TensorProtoObject[];
  input: ValueInfoProtoObject[];
  output: ValueInfoProtoObject[];
  doc_string?: string;
}

export interface ModelProtoObject {
  ir_version: number;
  opset_import: Array<{ domain: string; version: number }>;
  producer_name: string;
  producer_version?: string;
  doc_string?: string;
  graph: GraphProtoObject;
  metadata_props?: Array<{ key: string; value: string }>;
}

/** Serialises a model. */
export function encodeModel(model: ModelProtoObject): Uint8Array {
  const err = ModelProto.verify(model);
  if (err) throw new Error(`invalid ModelProto: ${err}`);
  return ModelProto.encode(model).finish();
}

/**
 * Parses model bytes into a plain object (int64 fields as numbers, bytes as
 * Uint8Array), for tests and tools that inspect an exported model.
 */
export function decodeModel(bytes: Uint8Array): Record<string, unknown> {
  return ModelProto.toObject(ModelProto.decode(bytes), { longs: Number, enums: Number, defaults: false });
}
