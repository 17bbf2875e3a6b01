import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import { feedForwardOnnx } from '../layers/feed-forward.ts';
import { layerNormOnnx } from '../layers/layer-norm.ts';
import {
  attendHeadsOnnx,
  attendStepAppendOnnx,
  attendStepOnnx,
  headSplitOnnx,
  keyPaddingBiasOnnx,
  projectHeadsOnnx,
  projectStepHeadsOnnx,
} from '../layers/multi-head-attention.ts';
import type { TransformerModel } from './transformer.ts';
import type { OnnxGraphOptions } from './types.ts';
import { encoderDecoderOnnx } from './graph-spec.ts';
import {
  crossAttentionStepOnnx,
  crossMemoryInputs,
  crossMemoryOnnx,
  residualOnnx,
  sourceEmbeddingOnnx,
  stepLogProbsOnnx,
  targetEmbeddingOnnx,
} from './residual-seq2seq-onnx.ts';

/**
 * The Transformer's two graphs. The encoder graph returns, besides the source mask, each decoder
 * layer's source keys and values (computed once per sentence) and the empty self-attention caches
 * [batch, heads, 0, d/heads]. The decoder-step graph reads the caches of the positions so far,
 * appends the current position's keys and values, and returns them as next_self_*; its position is
 * the caches' length, read from their shape, so nothing else needs feeding; besides `log_probs` it
 * returns each row's top-k (graph-spec.ts's emitStepLogProbs). Both graphs have dynamic batch
 * (rows) and length axes.
 *
 * With `decoderCache: 'append'` the step instead reads caches with spare capacity, of which the first `cache_len`
 * positions are filled, and returns only the current position's keys and values as new_self_*; the runtime writes
 * them into its buffers (the card's `graphs.decoder.cache`). The Concat form stays for consumers that feed
 * next_self_* back themselves (Triton, the Hugging Face layout).
 */
export function transformerOnnx(
  model: TransformerModel,
  opts: OnnxGraphOptions,
): { encoder: GraphBuilder; decoder: GraphBuilder; graphs: ModelCard['graphs'] } {
  const append = opts.decoderCache === 'append';
  const grouped = opts.groupedMemory === true;
  const built = encoderDecoderOnnx(model, ['src_ids', 'src_lengths'], opts, {
    encoder: (opset) => encoderGraph(model, opset),
    decoder: (opset, storeFrozen) => decoderGraph(model, opset, storeFrozen, append, grouped),
  });
  if (append) {
    const states = Object.fromEntries(model.stateNames.map((n) => [n, `new_${n}`]));
    built.graphs.decoder.cache = { kind: 'append', length: CACHE_LENGTH, axis: 2, states };
  }
  if (grouped) built.graphs.decoder.groupedMemory = true;
  return built;
}

/** The append-cache step's input: how many positions of each cache are filled. */
const CACHE_LENGTH = 'cache_len';

function encoderGraph(model: TransformerModel, opset: number): GraphBuilder {
  const g = new GraphBuilder('frost-transformer-encoder', { opset });
  const { model: d, heads } = model.cfg;
  const w = model.w;
  const source = sourceEmbeddingOnnx(g, model);
  const mask = source.mask;
  // The positions as rows [B·S, d] through the stack: every projection is then a Gemm with its bias (and the
  // feed-forward's ReLU) fused, not a MatMul and an Add over its whole output; only attention splits them.
  let x = g.op('Reshape', [source.x, g.constInt64([-1, d])]);
  const split = headSplitOnnx(g, heads, d / heads, mask);
  const bias = keyPaddingBiasOnnx(g, mask);
  for (const layer of w.encoder) {
    x = residualOnnx(g, model, x, layer.ln1, (h) =>
      attendHeadsOnnx(
        g,
        layer.self,
        h,
        projectHeadsOnnx(g, layer.self, 'k', h, split),
        projectHeadsOnnx(g, layer.self, 'v', h, split),
        bias,
        split,
      ),
    );
    x = residualOnnx(g, model, x, layer.ln2, (h) => feedForwardOnnx(g, layer.ff, h));
  }
  if (w.encoderNorm) x = layerNormOnnx(g, w.encoderNorm, x);
  // Back to [B, S, d] for the cross-attention's keys and values: the value they are projected from is the encoder's
  // hidden state that the Hugging Face layout returns as last_hidden_state (export/hf/encoder-model.ts).
  const hidden = g.op('Reshape', [x, g.op('Shape', [source.x])]);
  // The empty caches [B, h, 0, d/h]: a zero-length slice of a [B, h, S, d/h] value.
  const empty = g.slice(crossMemoryOnnx(g, model, hidden, mask), [0], [0], [2]);
  for (const name of model.stateNames) g.output(empty, name, 'float32', ['batch', heads, 'past_len', d / heads]);
  return g;
}

function decoderGraph(
  model: TransformerModel,
  opset: number,
  storeFrozen: boolean,
  append: boolean,
  grouped: boolean,
): GraphBuilder {
  const g = new GraphBuilder('frost-transformer-decoder-step', { opset });
  const { model: d, heads } = model.cfg;
  const dk = d / heads;
  const w = model.w;
  const prev = g.input('prev_token', 'int64', ['rows']);
  const layers = w.decoder.map((_, l) => ({
    pastK: g.input(`self_k_${l}`, 'float32', ['rows', heads, 'past_len', dk]),
    pastV: g.input(`self_v_${l}`, 'float32', ['rows', heads, 'past_len', dk]),
  }));
  const memory = crossMemoryInputs(g, model, grouped);
  const srcBias = keyPaddingBiasOnnx(g, memory.mask);
  // The position being decoded is the number of positions cached so far: the caches' length, or with append caches
  // the filled part of their capacity, the rest masked.
  const capacity = g.op('Gather', [g.op('Shape', [layers[0]!.pastK]), g.constInt64(2)]);
  const position = append ? g.input(CACHE_LENGTH, 'int64', []) : capacity;
  const unfilled = append
    ? g.op('Mul', [
        g.cast(g.op('Less', [g.op('Range', [g.constInt64(0), capacity, g.constInt64(1)]), position]), 'float32'),
        g.constFloat(1e9),
      ])
    : '';
  const pastBias = append ? g.op('Sub', [unfilled, g.constFloat(1e9)]) : '';
  // The step's rows stay [rows, d]: onnxruntime fuses each 2-D MatMul + Add into one Gemm, and one position's
  // heads split and merge by Reshape alone (multi-head-attention.ts's step functions).
  const start = targetEmbeddingOnnx(g, model, prev, position);
  const embedding = start.embedding;
  let x = start.x;
  w.decoder.forEach((layer, l) => {
    x = residualOnnx(g, model, x, layer.ln1, (h) => {
      const q = projectStepHeadsOnnx(g, layer.self, 'q', h);
      const newK = projectStepHeadsOnnx(g, layer.self, 'k', h);
      const newV = projectStepHeadsOnnx(g, layer.self, 'v', h);
      if (append) {
        // Through an Identity: the Reshape's own output as the graph output measured 0.92× at greedy batch 1.
        g.output(newK, `new_self_k_${l}`, 'float32', ['rows', heads, 1, dk]);
        g.output(newV, `new_self_v_${l}`, 'float32', ['rows', heads, 1, dk]);
        const past = { keys: layers[l]!.pastK, values: layers[l]!.pastV, bias: pastBias };
        return attendStepAppendOnnx(g, layer.self, q, past, newK, newV);
      }
      // The caches are the Concats' own outputs: a renaming Identity would copy them once more per step.
      const [k] = g.node('Concat', [layers[l]!.pastK, newK], { axis: 2 }, { outputs: [`next_self_k_${l}`] });
      const [v] = g.node('Concat', [layers[l]!.pastV, newV], { axis: 2 }, { outputs: [`next_self_v_${l}`] });
      g.output(k!, `next_self_k_${l}`, 'float32', ['rows', heads, 'next_len', dk]);
      g.output(v!, `next_self_v_${l}`, 'float32', ['rows', heads, 'next_len', dk]);
      return attendStepOnnx(g, layer.self, q, k!, v!, null);
    });
    x = residualOnnx(g, model, x, layer.ln2, (h) => crossAttentionStepOnnx(g, layer.cross, h, memory, srcBias, l));
    x = residualOnnx(g, model, x, layer.ln3, (h) => feedForwardOnnx(g, layer.ff, h));
  });
  stepLogProbsOnnx(g, model, x, embedding, storeFrozen);
  return g;
}
