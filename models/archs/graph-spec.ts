import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import type { OnnxGraphOptions, Seq2SeqModel } from './types.ts';

/** The opset an exported graph is built at unless the export asks for another. */
export const DEFAULT_OPSET = 18;

/**
 * An encoder-decoder model's `toOnnx`: its options resolved in one place (the encoder at
 * `encoderOpset`, else `opset`, else {@link DEFAULT_OPSET}; heads store no frozen matrix unless
 * `storeFrozen`), the two graphs the model builds, and the card's `graphs`.
 */
export function encoderDecoderOnnx(
  model: Pick<Seq2SeqModel, 'stateNames' | 'memoryNames'>,
  encoderInputs: string[],
  opts: OnnxGraphOptions,
  build: {
    encoder: (opset: number) => GraphBuilder;
    decoder: (opset: number, storeFrozen: boolean) => GraphBuilder;
  },
): { encoder: GraphBuilder; decoder: GraphBuilder; graphs: ModelCard['graphs'] } {
  const opset = opts.opset ?? DEFAULT_OPSET;
  return {
    encoder: build.encoder(opts.encoderOpset ?? opset),
    decoder: build.decoder(opset, opts.storeFrozen ?? false),
    graphs: encoderDecoderGraphs(model, encoderInputs),
  };
}

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
