/**
 * The names and shapes of Optimum's seq2seq ONNX contract (optimum/exporters/onnx `Seq2SeqOnnxConfig`), which
 * transformers.js (`models/modeling_utils.js`, `configs.js` getKeyValueNames) and Optimum's
 * `ORTModelForSeq2SeqLM` feed by name. transformers.js makes the first step's empty caches from the decoder's
 * declared input shapes: `batch_size` becomes the batch, every other named dim 0, so those dim names matter.
 */
import { TensorDataType, type ValueInfoProtoObject } from '../../core/onnx/proto.ts';

export const ENCODER_FILE = 'onnx/encoder_model.onnx';
export const DECODER_FILE = 'onnx/decoder_model_merged.onnx';

export const BATCH = 'batch_size';
export const ENCODER_LENGTH = 'encoder_sequence_length';
export const DECODER_LENGTH = 'decoder_sequence_length';
export const PAST_LENGTH = 'past_decoder_sequence_length';
export const PRESENT_LENGTH = 'past_decoder_sequence_length + 1';
export const ENCODER_CACHE_LENGTH = 'encoder_sequence_length_out';

/** `past_key_values.{layer}.{decoder|encoder}.{key|value}` and its `present.` twin. */
export function cacheName(
  kind: 'past_key_values' | 'present',
  layer: number,
  side: 'decoder' | 'encoder',
  which: 'key' | 'value',
): string {
  return `${kind}.${layer}.${side}.${which}`;
}

type ElemType = 'float32' | 'int64' | 'bool';
const ELEM: Record<ElemType, number> = {
  float32: TensorDataType.FLOAT,
  int64: TensorDataType.INT64,
  bool: TensorDataType.BOOL,
};

/** A graph input or output's declared type. */
export function tensorInfo(name: string, type: ElemType, dims: Array<string | number>): ValueInfoProtoObject {
  return {
    name,
    type: {
      tensor_type: {
        elem_type: ELEM[type],
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dim_value: d } : { dim_param: d })) },
      },
    },
  };
}
