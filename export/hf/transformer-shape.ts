/**
 * What the Hugging Face layout needs to know of an exported frost Transformer, read from its step graph's
 * declared inputs and outputs (so it describes the graphs as exported, whatever the run's config said).
 */
import type { GraphProtoObject } from '../../core/onnx/proto.ts';
import { valueInfo } from './graph-splice.ts';

export interface TransformerShape {
  decoderLayers: number;
  heads: number;
  /** Size of one head's keys and values (d / heads). */
  headSize: number;
  /** d, the model size. */
  model: number;
  /** Output vocabulary size. */
  vocab: number;
}

function fixedDim(graph: GraphProtoObject, name: string, axis: number): number {
  const dim = valueInfo(graph, name).type.tensor_type.shape.dim[axis];
  if (dim === undefined || !('dim_value' in dim))
    throw new Error(`graph '${graph.name}': '${name}' has no fixed size on axis ${axis}`);
  return dim.dim_value;
}

/** The shape of the Transformer whose decoder-step graph is `decoder` (frost's names: self_k_0, log_probs). */
export function transformerShape(decoder: GraphProtoObject): TransformerShape {
  const decoderLayers = decoder.input.filter((i) => /^self_k_\d+$/.test(i.name)).length;
  if (decoderLayers === 0)
    throw new Error(`graph '${decoder.name}': no self_k_<layer> inputs (not a Transformer step)`);
  const heads = fixedDim(decoder, 'self_k_0', 1);
  const headSize = fixedDim(decoder, 'self_k_0', 3);
  return { decoderLayers, heads, headSize, model: heads * headSize, vocab: fixedDim(decoder, 'log_probs', 1) };
}
