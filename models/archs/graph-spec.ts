import type { ModelCard } from '../../core/runtime/model-card.ts';
import type { Seq2SeqModel } from './types.ts';

/**
 * The card's `graphs` for an encoder and a decoder-step graph that talk the usual way: the encoder
 * reads `encoderInputs` and returns the decoder's initial state and its memory under the decoder's
 * input names; the step reads `prev_token` and returns `log_probs` and `next_<state>`. Every
 * architecture's export shares this shape, so the runtime reads them all alike.
 */
export function encoderDecoderGraphs(
  model: Pick<Seq2SeqModel, 'stateNames' | 'memoryNames'>,
  encoderInputs: string[],
): ModelCard['graphs'] {
  return {
    encoder: { file: 'encoder.onnx', inputs: encoderInputs, outputs: [...model.stateNames, ...model.memoryNames] },
    decoder: {
      file: 'decoder.onnx',
      token: 'prev_token',
      state: model.stateNames,
      memory: model.memoryNames,
      logProbs: 'log_probs',
    },
  };
}
