import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import type { OnnxGraphOptions, Seq2SeqModel } from './types.ts';

/** The opset an exported graph is built at unless the export asks for another. */
export const DEFAULT_OPSET = 18;

/**
 * An encoder-decoder model's `toOnnx`: its options resolved in one place (the encoder at
 * `encoderOpset`, else `opset`, else {@link DEFAULT_OPSET}; heads store no frozen matrix unless
 * `storeFrozen`), the two graphs the model builds, and the card's `graphs` (with `decoder.top` when
 * the step graph emits the top-k outputs, see {@link emitStepLogProbs}).
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
  const encoder = build.encoder(opts.encoderOpset ?? opset);
  const decoder = build.decoder(opset, opts.storeFrozen ?? false);
  // The card names the top-k outputs exactly when the step graph has them, at the k it emitted.
  const topK = emittedTopK(decoder);
  return {
    encoder,
    decoder,
    graphs: encoderDecoderGraphs(model, encoderInputs, topK === undefined ? {} : { topK }),
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

/** The k of a decoder step over `vocabSize` tokens: {@link DECODER_TOP_K}, or the whole vocabulary when smaller. */
export function decoderTopK(vocabSize: number): number {
  return Math.min(DECODER_TOP_K, vocabSize);
}

/**
 * The end of every decoder step graph: `log_probs` [rows, V] = LogSoftmax(`logits`), and its top-k
 * outputs ({@link emitTopK} at {@link decoderTopK}), which {@link encoderDecoderOnnx} then names in
 * the card. `log_probs` is the LogSoftmax's own output: with a renaming Identity, onnxruntime copied
 * the [rows, V] rows once more per step (docs/decoding-speed.md).
 */
export function emitStepLogProbs(g: GraphBuilder, logits: string, vocabSize: number): string {
  const [logProbs] = g.node('LogSoftmax', [logits], { axis: 1 }, { outputs: ['log_probs'] });
  g.output(logProbs!, 'log_probs', 'float32', ['rows', vocabSize]);
  emitTopK(g, logProbs!, decoderTopK(vocabSize));
  return logProbs!;
}

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

/** The k of a step graph's top-k outputs (its `top_log_probs` [rows, k]), or undefined when it has none. */
export function emittedTopK(decoder: GraphBuilder): number | undefined {
  const outputs = decoder.toGraphProto().output;
  const values = outputs.find((o) => o.name === TOP_LOG_PROBS);
  if (values === undefined) return undefined;
  if (!outputs.some((o) => o.name === TOP_TOKENS))
    throw new Error(`graph '${decoder.name}': output '${TOP_LOG_PROBS}' without '${TOP_TOKENS}'`);
  const k = values.type.tensor_type.shape.dim[1];
  if (k === undefined || !('dim_value' in k))
    throw new Error(`graph '${decoder.name}': output '${TOP_LOG_PROBS}' needs a fixed k as its second dim`);
  return k.dim_value;
}
