/**
 * An exported ONNX file read back as the plain objects frost's emitter writes (core/onnx/proto.ts), with the
 * fields protobuf leaves out when empty filled in, so the Hugging Face graphs can be spliced from it and
 * written again with the same encoder.
 */
import { readFile } from 'node:fs/promises';
import {
  decodeModel,
  type GraphProtoObject,
  type ModelProtoObject,
  type NodeProtoObject,
  type TensorProtoObject,
} from '../../core/onnx/proto.ts';

/** A message as protobuf's toObject gives it: any field may be missing. */
type Loose<T> = { [K in keyof T]?: T[K] };

function graphOf(raw: Loose<GraphProtoObject>): GraphProtoObject {
  const nodes = (raw.node ?? []) as Array<Loose<NodeProtoObject>>;
  const initializers = (raw.initializer ?? []) as Array<Loose<TensorProtoObject>>;
  return {
    name: raw.name ?? '',
    node: nodes.map((n) => ({
      input: n.input ?? [],
      output: n.output ?? [],
      name: n.name ?? '',
      op_type: n.op_type!,
      ...(n.domain ? { domain: n.domain } : {}),
      attribute: n.attribute ?? [],
    })),
    initializer: initializers.map((t) => ({
      ...t,
      dims: t.dims ?? [],
      data_type: t.data_type!,
    })),
    input: raw.input ?? [],
    output: raw.output ?? [],
  };
}

/** The model in `path`: its graph and opset imports. */
export async function readOnnxModel(path: string): Promise<ModelProtoObject> {
  const raw = decodeModel(await readFile(path)) as Loose<ModelProtoObject>;
  return {
    ir_version: raw.ir_version!,
    opset_import: (raw.opset_import ?? []).map((o) => ({ domain: o.domain ?? '', version: o.version })),
    producer_name: raw.producer_name ?? 'frost',
    graph: graphOf(raw.graph as Loose<GraphProtoObject>),
  };
}
