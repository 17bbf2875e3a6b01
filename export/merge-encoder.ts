/**
 * Puts a frozen pretrained image encoder (`frost train --encoder some.onnx`) in front of a caption
 * model's encoder graph, so the exported encoder takes pixels like one with frost's own CNN:
 *
 *   pixels ─▶ [foreign graph, every name prefixed `frozen-encoder/`] ─▶ features ─▶ [model's encoder] ─▶ h, c, …
 *
 * The foreign graph's input becomes `pixels` and its chosen output becomes the value the model's
 * encoder reads (`features`); its other outputs are dropped. Everything is rewritten at the
 * ModelProto level (nodes, initializers, value_info, subgraph bodies), so any ONNX encoder merges,
 * whatever ops it uses. The model's graph must be built at the foreign graph's opset (Seq2SeqModel
 * .toOnnx's `encoderOpset`): one model has one version of each domain.
 *
 * Isomorphic (protobufjs only).
 */
import { ModelProto } from '../core/onnx/proto.ts';

/** Prefix of every name taken from the foreign graph. */
export const FROZEN_ENCODER_SCOPE = 'frozen-encoder';

// The decoded protobuf messages, as far as this file reads and writes them (snake_case as in onnx.proto).
interface Tensor {
  name?: string;
  data_location?: number;
}
interface ValueInfo {
  name: string;
  type?: unknown;
}
interface Attribute {
  g?: Graph | null;
  graphs?: Graph[];
}
interface Node {
  input: string[];
  output: string[];
  name?: string;
  attribute?: Attribute[];
}
interface Graph {
  name?: string;
  node: Node[];
  initializer: Tensor[];
  sparse_initializer?: unknown[];
  input: ValueInfo[];
  output: ValueInfo[];
  value_info?: ValueInfo[];
}
interface OpsetId {
  domain?: string;
  version: number | { toNumber(): number };
}
interface Model {
  ir_version: number | { toNumber(): number };
  opset_import: OpsetId[];
  graph: Graph;
  functions?: unknown[];
}

const EXTERNAL = 1;

/** The default-domain opset a model imports (what the model's encoder graph must be built at). */
export function onnxOpset(bytes: Uint8Array): number {
  const model = decode(bytes, 'the frozen encoder');
  const entry = model.opset_import.find((o) => (o.domain ?? '') === '' || o.domain === 'ai.onnx');
  if (!entry) throw new Error('the frozen encoder imports no default-domain opset');
  return num(entry.version);
}

/**
 * The merged encoder model.
 * @param foreign the frozen encoder's bytes (as copied into the run folder)
 * @param output the foreign output the model reads
 * @param model the model's encoder graph (built at the foreign opset), whose input `featuresInput` is replaced
 * @param pixelsInput the merged graph's input name (the card's `graphs.encoder.inputs`)
 * @throws Error naming what cannot be merged: weights stored outside the file, model-local functions,
 *   sparse initializers, a missing output, different default-domain opsets
 */
export function mergeFrozenEncoder(
  foreign: Uint8Array,
  output: string,
  model: Uint8Array,
  featuresInput: string,
  pixelsInput: string,
): Uint8Array {
  const outer = decode(foreign, 'the frozen encoder');
  const inner = decode(model, "the model's encoder graph");
  const f = outer.graph;
  if ((outer.functions?.length ?? 0) > 0)
    throw new Error('the frozen encoder defines model-local functions, which frost does not merge');
  if ((f.sparse_initializer?.length ?? 0) > 0)
    throw new Error('the frozen encoder has sparse initializers, which frost does not merge');
  if (f.initializer.some((t) => t.data_location === EXTERNAL)) {
    throw new Error(
      'the frozen encoder keeps weights in external data files; save it with the weights inside the .onnx file',
    );
  }
  if (!f.output.some((o) => o.name === output))
    throw new Error(
      `the frozen encoder has no output '${output}' (outputs: ${f.output.map((o) => o.name).join(', ')})`,
    );
  const opset = (m: Model) =>
    num(m.opset_import.find((o) => (o.domain ?? '') === '' || o.domain === 'ai.onnx')?.version ?? 0);
  if (opset(outer) !== opset(inner)) {
    throw new Error(
      `opset mismatch: the frozen encoder uses opset ${opset(outer)}, the model's encoder graph ${opset(inner)}; build it at the encoder's opset`,
    );
  }

  const initializerNames = new Set(f.initializer.map((t) => t.name ?? ''));
  const inputs = f.input.filter((i) => !initializerNames.has(i.name));
  if (inputs.length !== 1)
    throw new Error(`the frozen encoder must have one (non-initializer) input, it has ${inputs.length}`);
  const foreignInput = inputs[0].name;
  const rename = (name: string): string => {
    if (name === '') return name;
    if (name === foreignInput) return pixelsInput;
    if (name === output) return featuresInput;
    return `${FROZEN_ENCODER_SCOPE}/${name}`;
  };
  renameGraph(f, rename);

  const g = inner.graph;
  const modelInput = g.input.find((i) => i.name === featuresInput);
  if (!modelInput) throw new Error(`the model's encoder graph has no input '${featuresInput}'`);
  const pixels = f.input.find((i) => i.name === pixelsInput)!;
  g.node = [...f.node, ...g.node];
  g.initializer = [...f.initializer, ...g.initializer];
  g.input = [pixels, ...g.input.filter((i) => i !== modelInput)];
  g.value_info = [...(f.value_info ?? []), ...(g.value_info ?? [])];
  for (const o of outer.opset_import) {
    const domain = o.domain ?? '';
    if (!inner.opset_import.some((i) => (i.domain ?? '') === domain)) inner.opset_import.push(o);
  }
  inner.ir_version = Math.max(num(inner.ir_version), num(outer.ir_version));
  return ModelProto.encode(inner as unknown as Parameters<typeof ModelProto.encode>[0]).finish();
}

/** Renames every value and node of a graph, its subgraphs' included (they share one namespace). */
function renameGraph(g: Graph, rename: (name: string) => string): void {
  for (const t of g.initializer) t.name = rename(t.name ?? '');
  for (const v of [...g.input, ...g.output, ...(g.value_info ?? [])]) v.name = rename(v.name);
  for (const n of g.node) {
    n.input = n.input.map(rename);
    n.output = n.output.map(rename);
    if (n.name) n.name = `${FROZEN_ENCODER_SCOPE}/${n.name}`;
    for (const a of n.attribute ?? []) {
      if (a.g) renameGraph(a.g, rename);
      for (const sub of a.graphs ?? []) renameGraph(sub, rename);
    }
  }
}

function decode(bytes: Uint8Array, what: string): Model {
  try {
    return ModelProto.decode(bytes) as unknown as Model;
  } catch (err) {
    throw new Error(`${what} is not an ONNX model (${(err as Error).message})`, { cause: err });
  }
}

function num(v: number | { toNumber(): number }): number {
  return typeof v === 'number' ? v : v.toNumber();
}
