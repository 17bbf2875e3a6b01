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
    /** The decoder step's top-k outputs, for a step graph that emits them ({@link emitTopK}). */
    topK?: number;
  },
): { encoder: GraphBuilder; decoder: GraphBuilder; graphs: ModelCard['graphs'] } {
  const opset = opts.opset ?? DEFAULT_OPSET;
  return {
    encoder: build.encoder(opts.encoderOpset ?? opset),
    decoder: build.decoder(opset, opts.storeFrozen ?? false),
    graphs: encoderDecoderGraphs(model, encoderInputs, build.topK === undefined ? {} : { topK: build.topK }),
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
  opts: { topK?: number } = {},
): ModelCard['graphs'] {
  const top = opts.topK === undefined ? {} : { top: { logProbs: TOP_LOG_PROBS, tokens: TOP_TOKENS, k: opts.topK } };
  return {
    encoder: { file: 'encoder.onnx', inputs: encoderInputs, outputs: [...model.stateNames, ...model.memoryNames] },
    decoder: {
      file: 'decoder.onnx',
      token: 'prev_token',
      state: model.stateNames,
      memory: model.memoryNames,
      logProbs: 'log_probs',
      ...top,
    },
  };
}

/** Names of the decoder step's optional top-k outputs (the card's `graphs.decoder.top`). */
export const TOP_LOG_PROBS = 'top_log_probs';
export const TOP_TOKENS = 'top_tokens';

/**
 * How many candidates per row a decoder step graph returns in its top-k outputs. Search needs its own
 * candidates per row (1 for greedy, beam + 1 for beam search) plus one per token it masks (<pad>,
 * <s>, <unk>, </s> before minLen), so 16 covers beams up to 11; a wider beam reads the whole rows.
 */
export const DECODER_TOP_K = 16;

/**
 * Emits the top-k outputs for `logProbs` [rows, V]: ONNX TopK sorts equal values by lower index,
 * the order core/decode's top-k uses, so search picks the same tokens from either.
 */
export function emitTopK(g: GraphBuilder, logProbs: string, k: number): void {
  const [values, indices] = g.node(
    'TopK',
    [logProbs, g.constInt64([k], [1], 'top_k')],
    { axis: 1, largest: 1, sorted: 1 },
    { outputs: [TOP_LOG_PROBS, `${TOP_TOKENS}_int64`] },
  );
  g.output(values!, TOP_LOG_PROBS, 'float32', ['rows', k]);
  const [tokens] = g.node('Cast', [indices!], { to: 6 /* int32 */ }, { outputs: [TOP_TOKENS] });
  g.output(tokens!, TOP_TOKENS, 'int32', ['rows', k]);
}
