/**
 * `onnx/encoder_model.onnx`: frost's encoder graph read as Optimum's encoder. It reads `input_ids` and
 * `attention_mask` [batch_size, encoder_sequence_length] and returns `last_hidden_state` [batch, length, d],
 * the encoder stack's output: the value frost's encoder projects into each decoder layer's source keys and
 * values. Those projections move to the decoder (decoder-model.ts), which computes them on its first step.
 */
import type { ModelProtoObject, NodeProtoObject } from '../../core/onnx/proto.ts';
import { matMulInput, spliceGraph } from './graph-splice.ts';
import { BATCH, ENCODER_LENGTH, tensorInfo } from './optimum-names.ts';
import type { TransformerShape } from './transformer-shape.ts';

/** The value frost's encoder graph projects into `cross_k_<l>` / `cross_v_<l>`: its last hidden state. */
export function encoderHiddenState(frostEncoder: ModelProtoObject, shape: TransformerShape): string {
  const sources = new Set<string>();
  for (let l = 0; l < shape.decoderLayers; l++)
    for (const kv of ['k', 'v']) sources.add(matMulInput(frostEncoder.graph, `cross_${kv}_${l}`));
  if (sources.size !== 1)
    throw new Error(`encoder graph: the source keys and values are projected from ${sources.size} values, not one`);
  return [...sources][0]!;
}

export function encoderModel(frostEncoder: ModelProtoObject, shape: TransformerShape): ModelProtoObject {
  const hidden = encoderHiddenState(frostEncoder, shape);
  // frost's encoder reads lengths; a right-padded attention mask's row sums are those lengths.
  const lengths: NodeProtoObject = {
    name: 'attention_mask/lengths',
    op_type: 'ReduceSum',
    input: ['attention_mask', 'attention_mask/axis'],
    output: ['attention_mask/lengths'],
    attribute: [{ name: 'keepdims', type: 2 /* INT */, i: 0 }],
  };
  const body = spliceGraph(frostEncoder.graph, 'frost', { src_ids: 'input_ids', src_lengths: lengths.output[0]! }, [
    hidden,
  ]);
  const axis = { name: 'attention_mask/axis', dims: [1], data_type: 7 /* INT64 */, raw_data: int64Bytes([1]) };
  const output: NodeProtoObject = {
    name: 'last_hidden_state/Identity',
    op_type: 'Identity',
    input: [body.values[hidden]!],
    output: ['last_hidden_state'],
    attribute: [],
  };
  return {
    ...frostEncoder,
    graph: {
      name: 'frost-transformer-encoder-optimum',
      node: [lengths, ...body.nodes, output],
      initializer: [axis, ...body.initializers],
      input: [
        tensorInfo('input_ids', 'int64', [BATCH, ENCODER_LENGTH]),
        tensorInfo('attention_mask', 'int64', [BATCH, ENCODER_LENGTH]),
      ],
      output: [tensorInfo('last_hidden_state', 'float32', [BATCH, ENCODER_LENGTH, shape.model])],
    },
  };
}

/** Little-endian int64 bytes, as TensorProto.raw_data stores them. */
export function int64Bytes(values: number[]): Uint8Array {
  return new Uint8Array(BigInt64Array.from(values, (v) => BigInt(v)).buffer);
}
