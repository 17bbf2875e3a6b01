/**
 * Splicing one of frost's exported graphs into another graph: the Hugging Face layout's two graphs are frost's
 * own encoder and decoder-step graphs, rewired to Optimum's names, never a second Transformer. A splice takes
 * the nodes that a set of wanted values needs, stopping at the values it is told to feed from outside, and
 * renames every value under a prefix, so two frost graphs (whose internal names may clash) sit in one model.
 */
import type {
  GraphProtoObject,
  NodeProtoObject,
  TensorProtoObject,
  ValueInfoProtoObject,
} from '../../core/onnx/proto.ts';

/** The nodes and initializers of a splice, and the new names of the values it was asked for. */
export interface Splice {
  nodes: NodeProtoObject[];
  initializers: TensorProtoObject[];
  /** The new name of each wanted value. */
  values: Record<string, string>;
}

/**
 * The part of `graph` that computes `wanted` when each value named in `feeds` (a graph input or any value inside
 * it) is read from the outer name it maps to. Everything else is renamed `prefix/<name>`.
 * @throws Error when a wanted value needs a graph input that `feeds` does not cover, or a node holds a subgraph
 */
export function spliceGraph(
  graph: GraphProtoObject,
  prefix: string,
  feeds: Readonly<Record<string, string>>,
  wanted: readonly string[],
): Splice {
  const producer = new Map<string, NodeProtoObject>();
  for (const node of graph.node) for (const out of node.output) if (out !== '') producer.set(out, node);
  const initializers = new Map(graph.initializer.map((t) => [t.name!, t]));
  const graphInputs = new Set(graph.input.map((i) => i.name));
  const rename = (name: string): string => (name === '' ? '' : (feeds[name] ?? `${prefix}/${name}`));

  const keptNodes = new Set<NodeProtoObject>();
  const keptInitializers = new Set<string>();
  const pending = [...wanted];
  const seen = new Set<string>();
  while (pending.length > 0) {
    const value = pending.pop()!;
    if (value === '' || seen.has(value) || Object.hasOwn(feeds, value)) continue;
    seen.add(value);
    if (initializers.has(value)) {
      keptInitializers.add(value);
      continue;
    }
    const node = producer.get(value);
    if (node === undefined) {
      const what = graphInputs.has(value) ? 'graph input' : 'value';
      throw new Error(`graph '${graph.name}': ${what} '${value}' is needed but not fed`);
    }
    if (node.attribute.some((a) => a.g !== undefined))
      throw new Error(`graph '${graph.name}': node '${node.name}' (${node.op_type}) holds a subgraph`);
    keptNodes.add(node);
    pending.push(...node.input);
  }
  return {
    // In the graph's own order, which is topological.
    nodes: graph.node
      .filter((n) => keptNodes.has(n))
      .map((n) => ({
        ...n,
        name: `${prefix}/${n.name}`,
        input: n.input.map(rename),
        output: n.output.map(rename),
      })),
    initializers: graph.initializer
      .filter((t) => keptInitializers.has(t.name!))
      .map((t) => ({ ...t, name: rename(t.name!) })),
    values: Object.fromEntries(wanted.map((w) => [w, rename(w)])),
  };
}

/** `graph`'s input or output `name`, whose type a spliced graph restates under its own name. */
export function valueInfo(graph: GraphProtoObject, name: string): ValueInfoProtoObject {
  const info = [...graph.input, ...graph.output].find((v) => v.name === name);
  if (info === undefined) throw new Error(`graph '${graph.name}' has no input or output '${name}'`);
  return info;
}

/**
 * The value that feeds the MatMul `output` is computed from: walking back through each node's first input
 * from a graph output to the first MatMul (frost's head projections end MatMul → Add → Reshape → Transpose).
 */
export function matMulInput(graph: GraphProtoObject, output: string): string {
  const producer = new Map<string, NodeProtoObject>();
  for (const node of graph.node) for (const out of node.output) producer.set(out, node);
  let value = output;
  for (let hops = 0; hops < 16; hops++) {
    const node = producer.get(value);
    if (node === undefined) break;
    if (node.op_type === 'MatMul') return node.input[0]!;
    value = node.input[0]!;
  }
  throw new Error(`graph '${graph.name}': no MatMul found behind output '${output}'`);
}
