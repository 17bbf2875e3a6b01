/**
 * Reads what tools need to know about a serialized ONNX model without running it: its opset, the
 * names, element types and shapes of its inputs and outputs, and its initializers with their sizes.
 * Used by the size report, the Triton config writer and `frost inspect`; works on any ModelProto,
 * not only frost's own.
 */
import { decodeModel, TensorDataType } from '../core/onnx/proto.ts';

/** Element type names by ONNX TensorProto.DataType code (frost's names where frost has one). */
const ELEMENT_TYPES: Readonly<Record<number, string>> = {
  [TensorDataType.FLOAT]: 'float32',
  [TensorDataType.UINT8]: 'uint8',
  [TensorDataType.INT8]: 'int8',
  [TensorDataType.UINT16]: 'uint16',
  [TensorDataType.INT16]: 'int16',
  [TensorDataType.INT32]: 'int32',
  [TensorDataType.INT64]: 'int64',
  [TensorDataType.STRING]: 'string',
  [TensorDataType.BOOL]: 'bool',
  [TensorDataType.FLOAT16]: 'float16',
  [TensorDataType.DOUBLE]: 'float64',
  [TensorDataType.UINT32]: 'uint32',
  [TensorDataType.UINT64]: 'uint64',
  [TensorDataType.BFLOAT16]: 'bfloat16',
};

const ELEMENT_BYTES: Readonly<Record<string, number>> = {
  float32: 4,
  uint8: 1,
  int8: 1,
  uint16: 2,
  int16: 2,
  int32: 4,
  int64: 8,
  bool: 1,
  float16: 2,
  float64: 8,
  uint32: 4,
  uint64: 8,
  bfloat16: 2,
};

/** The element type name of an ONNX data type code ('float32', 'int64', ...; `type<code>` if unknown). */
function elementTypeName(code: number): string {
  return ELEMENT_TYPES[code] ?? `type${code}`;
}

/** A graph input or output. A dim is a fixed size, a symbolic name ('batch'), or null when unknown. */
export interface GraphValueInfo {
  name: string;
  elemType: string;
  dims: (number | string | null)[];
}

/** A stored tensor of the graph. `bytes` is its payload size. */
export interface InitializerInfo {
  name: string;
  elemType: string;
  dims: number[];
  bytes: number;
}

/** What {@link readGraphInfo} reports. */
export interface GraphInfo {
  /** Opset of the default (ai.onnx) domain. */
  opset: number;
  inputs: GraphValueInfo[];
  outputs: GraphValueInfo[];
  /** Initializers of the main graph and of every subgraph. */
  initializers: InitializerInfo[];
  /** Node count, subgraphs included. */
  nodes: number;
}

interface RawTensor {
  name?: string;
  dims?: number[];
  data_type?: number;
  raw_data?: Uint8Array;
  float_data?: number[];
  int32_data?: number[];
  int64_data?: number[];
  double_data?: number[];
  uint64_data?: number[];
}

interface RawValueInfo {
  name?: string;
  type?: { tensor_type?: { elem_type?: number; shape?: { dim?: Array<{ dim_value?: number; dim_param?: string }> } } };
}

interface RawGraph {
  node?: Array<{ attribute?: Array<{ g?: RawGraph; graphs?: RawGraph[] }> }>;
  initializer?: RawTensor[];
  input?: RawValueInfo[];
  output?: RawValueInfo[];
}

function valueInfo(v: RawValueInfo): GraphValueInfo {
  const tensor = v.type?.tensor_type;
  return {
    name: v.name ?? '',
    elemType: elementTypeName(tensor?.elem_type ?? 0),
    dims: (tensor?.shape?.dim ?? []).map((d) => d.dim_value ?? d.dim_param ?? null),
  };
}

function tensorPayloadBytes(t: RawTensor, elemType: string): number {
  if (t.raw_data !== undefined && t.raw_data.length > 0) return t.raw_data.length;
  const count = (t.dims ?? []).reduce((a, b) => a * b, 1);
  return count * (ELEMENT_BYTES[elemType] ?? 0);
}

function collect(graph: RawGraph, out: { initializers: InitializerInfo[]; nodes: number }): void {
  for (const t of graph.initializer ?? []) {
    const elemType = elementTypeName(t.data_type ?? 0);
    out.initializers.push({
      name: t.name ?? '',
      elemType,
      dims: [...(t.dims ?? [])],
      bytes: tensorPayloadBytes(t, elemType),
    });
  }
  for (const node of graph.node ?? []) {
    out.nodes += 1;
    for (const a of node.attribute ?? []) {
      if (a.g) collect(a.g, out);
      for (const g of a.graphs ?? []) collect(g, out);
    }
  }
}

/** Decodes model bytes and summarises the interface and the stored tensors. */
export function readGraphInfo(bytes: Uint8Array): GraphInfo {
  const model = decodeModel(bytes) as { opset_import?: Array<{ domain?: string; version?: number }>; graph?: RawGraph };
  const graph = model.graph ?? {};
  const opset = (model.opset_import ?? []).find((o) => (o.domain ?? '') === '' || o.domain === 'ai.onnx')?.version ?? 0;
  const initializerNames = new Set((graph.initializer ?? []).map((t) => t.name));
  const out = { initializers: [] as InitializerInfo[], nodes: 0 };
  collect(graph, out);
  return {
    opset,
    // Models from older exporters list initializers among the inputs too; those are not inputs to feed.
    inputs: (graph.input ?? []).filter((v) => !initializerNames.has(v.name)).map(valueInfo),
    outputs: (graph.output ?? []).map(valueInfo),
    initializers: out.initializers,
    nodes: out.nodes,
  };
}
