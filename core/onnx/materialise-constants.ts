/**
 * A graph's values computed from its initializers alone (a seeded head's regenerated matrix, an
 * int8-compute graph's quantised copy of it), split out so that a client can compute them once,
 * store them, and open later sessions from a graph that holds them as plain initializers.
 *
 * Why: onnxruntime folds such values when a session is created, every time. In the browser that made
 * a `fixed-l2` model's warm load ~4× slower than a `learned` one's (issue 18), although both run at
 * the same speed afterwards. The download stays small: only the page's own cache holds the big
 * version. Isomorphic (protobufjs only), so the browser client and Node tests share it.
 */
import type { InferenceSession } from 'onnxruntime-common';
import { decodeModel, encodeModel, TensorDataType, type ModelProtoObject } from './proto.ts';

interface Attribute {
  name: string;
  i?: number;
  t?: { data_type?: number };
  g?: unknown;
  graphs?: unknown[];
}

interface Node {
  input: string[];
  output: string[];
  op_type: string;
  domain?: string;
  attribute?: Attribute[];
}

interface Tensor {
  name: string;
  data_type: number;
  dims?: number[];
  raw_data?: Uint8Array;
}

interface ValueInfo {
  name: string;
  type?: unknown;
}

interface Graph {
  name?: string;
  node?: Node[];
  initializer?: Tensor[];
  input?: ValueInfo[];
  output?: ValueInfo[];
}

type Model = Record<string, unknown> & { graph: Graph };

const encode = (model: Model): Uint8Array => encodeModel(model as unknown as ModelProtoObject);

/** A materialised value: what an onnxruntime tensor of the constants graph holds. */
export interface ConstantValue {
  type: string;
  dims: readonly number[];
  data: ArrayBufferView;
}

/** Element types of the outputs the split can name, by onnxruntime's tensor type string. */
const TYPE_CODES: Readonly<Record<string, number>> = {
  float32: TensorDataType.FLOAT,
  uint8: TensorDataType.UINT8,
  int8: TensorDataType.INT8,
  int32: TensorDataType.INT32,
  int64: TensorDataType.INT64,
  uint32: TensorDataType.UINT32,
  bool: TensorDataType.BOOL,
};

/** Ops whose first output's type is not their first input's: the element type rules the split needs. */
function outputTypes(node: Node, typeOf: (name: string) => number | undefined): Array<number | undefined> {
  const attr = (name: string) => node.attribute?.find((a) => a.name === name);
  switch (node.op_type) {
    case 'Cast':
      return [attr('to')?.i];
    case 'Shape':
    case 'Size':
      return [TensorDataType.INT64];
    case 'Equal':
    case 'Less':
    case 'Greater':
    case 'Not':
      return [TensorDataType.BOOL];
    case 'DynamicQuantizeLinear':
      return [TensorDataType.UINT8, TensorDataType.FLOAT, TensorDataType.UINT8];
    case 'Constant':
      return [attr('value')?.t?.data_type];
    default:
      return node.output.map(() => typeOf(node.input[0] ?? ''));
  }
}

/**
 * The constants graph of `bytes`: the nodes computed from initializers alone, with the values the
 * rest of the graph reads from them as outputs. Null when there are none, or when the graph has
 * subgraphs or ops from other domains (left alone: onnxruntime folds them as before).
 */
export function constantsGraph(bytes: Uint8Array): { bytes: Uint8Array; outputs: string[] } | null {
  const model = decodeModel(bytes) as unknown as Model;
  const graph = model.graph;
  const nodes = graph.node ?? [];
  if (
    nodes.some(
      (n) => (n.domain ?? '') !== '' || n.attribute?.some((a) => a.g !== undefined || (a.graphs?.length ?? 0) > 0),
    )
  )
    return null;
  const types = new Map<string, number>();
  for (const t of graph.initializer ?? []) types.set(t.name, t.data_type);
  for (const i of graph.input ?? []) types.delete(i.name);
  const constant = new Set(types.keys());
  const constNodes: Node[] = [];
  for (const n of nodes) {
    const ins = n.input.filter((x) => x !== '');
    if (ins.length === 0 || n.op_type.startsWith('Random') || !ins.every((x) => constant.has(x))) continue;
    const out = outputTypes(n, (name) => types.get(name));
    if (out.some((t) => t === undefined)) return null;
    n.output.forEach((o, k) => {
      constant.add(o);
      types.set(o, out[k]!);
    });
    constNodes.push(n);
  }
  const computed = new Set(constNodes.flatMap((n) => n.output));
  const read = new Set([
    ...nodes.filter((n) => !constNodes.includes(n)).flatMap((n) => n.input),
    ...(graph.output ?? []).map((o) => o.name),
  ]);
  const outputs = [...computed].filter((name) => read.has(name));
  if (outputs.length === 0) return null;
  const used = new Set(constNodes.flatMap((n) => n.input));
  const sub: Model = {
    ...model,
    graph: {
      name: `${graph.name ?? 'graph'}-constants`,
      node: constNodes,
      initializer: (graph.initializer ?? []).filter((t) => used.has(t.name)),
      input: [],
      output: outputs.map((name) => ({ name, type: { tensor_type: { elem_type: types.get(name) } } })),
    },
  };
  return { bytes: encode(sub), outputs };
}

/**
 * `bytes` with the constants graph's nodes replaced by `values` (its outputs, computed once) as
 * initializers; initializers nothing reads any more are dropped. `split` is `constantsGraph(bytes)`, passed in
 * by a caller that has it already.
 * @throws Error when `values` lacks an output of {@link constantsGraph} or holds an unknown type
 */
export function withMaterialisedConstants(
  bytes: Uint8Array,
  values: Readonly<Record<string, ConstantValue>>,
  split = constantsGraph(bytes),
): Uint8Array {
  if (!split) return bytes;
  const model = decodeModel(bytes) as unknown as Model;
  const graph = model.graph;
  const constantNodes = new Set(
    (decodeModel(split.bytes) as unknown as Model).graph.node?.map((n) => n.output.join('|')),
  );
  const kept = (graph.node ?? []).filter((n) => !constantNodes.has(n.output.join('|')));
  const added: Tensor[] = split.outputs.map((name) => {
    const v = values[name];
    if (!v) throw new Error(`materialised constants: no value for '${name}'`);
    const code = TYPE_CODES[v.type];
    if (code === undefined) throw new Error(`materialised constants: '${name}' has unsupported type ${v.type}`);
    const raw = new Uint8Array(v.data.buffer, v.data.byteOffset, v.data.byteLength).slice();
    return { name, data_type: code, dims: [...v.dims], raw_data: raw };
  });
  const read = new Set([...kept.flatMap((n) => n.input), ...(graph.output ?? []).map((o) => o.name)]);
  graph.node = kept;
  graph.initializer = [...(graph.initializer ?? []).filter((t) => read.has(t.name)), ...added];
  return encode(model);
}

/** What {@link materialiseWith} needs of an onnxruntime module: onnxruntime-node's and -web's both fit. */
export interface SessionMaker {
  InferenceSession: {
    create(bytes: Uint8Array, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  };
}

/**
 * `bytes` with the values of `split` (its {@link constantsGraph}) computed once by `ort` with `options`
 * and stored as initializers ({@link withMaterialisedConstants}). Node sessions and the browser page
 * both open seeded graphs this way.
 */
export async function materialiseWith(
  ort: SessionMaker,
  bytes: Uint8Array,
  split: { bytes: Uint8Array; outputs: string[] },
  options: InferenceSession.SessionOptions,
): Promise<Uint8Array> {
  const session = await ort.InferenceSession.create(split.bytes, options);
  const values: Record<string, ConstantValue> = {};
  try {
    const out = await session.run({});
    for (const name of split.outputs) {
      const t = out[name]!;
      values[name] = { type: t.type, dims: t.dims, data: t.data as ArrayBufferView };
    }
  } finally {
    await session.release();
  }
  // The caller has split the graph already: splitting again would decode and re-encode it a second time.
  return withMaterialisedConstants(bytes, values, split);
}
