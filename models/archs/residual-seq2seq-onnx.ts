import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { OutputHead } from '../heads/types.ts';
import { layerNormOnnx, type LayerNormWeights } from '../layers/layer-norm.ts';
import {
  attendGroupedStepOnnx,
  attendStepOnnx,
  projectHeadsOnnx,
  projectStepHeadsOnnx,
  type MultiHeadAttentionWeights,
} from '../layers/multi-head-attention.ts';
import { positionVectorsOnnx } from '../layers/positional-encoding.ts';
import { tensorValue } from '../onnx-values.ts';
import { emitStepLogProbs } from './graph-spec.ts';
import { embeddingFactor, type ResidualConfig, type ResidualWeights } from './residual-seq2seq.ts';

/**
 * The graph pieces of what residual-seq2seq.ts's models share (the Transformer's transformer-onnx.ts, LightConv's
 * lightconv-onnx.ts): the embeddings, the residual blocks, the cross-attention's keys and values as encoder
 * outputs, and the decoder step's end. Inference: no dropout.
 */
export interface ResidualOnnxModel {
  readonly cfg: ResidualConfig;
  readonly w: ResidualWeights;
  readonly head: OutputHead;
  readonly sizes: { tgtVocab: number };
}

/** LN(x + F(x)) or x + F(LN(x)), as the models' residual blocks. */
export function residualOnnx(
  g: GraphBuilder,
  model: ResidualOnnxModel,
  x: string,
  ln: LayerNormWeights,
  f: (h: string) => string,
): string {
  if (model.cfg.norm === 'pre') return g.op('Add', [x, f(layerNormOnnx(g, ln, x))]);
  return layerNormOnnx(g, ln, g.op('Add', [x, f(x)]));
}

/**
 * The encoder's inputs `src_ids` [batch, src_len] and `src_lengths` [batch] (int64), its padding mask [B, S]
 * (1 at a real token) and the embedded source s · E[src] + P[0 … S−1] [B, S, d] (s: √d, or 1 with embeddingScale=none).
 */
export function sourceEmbeddingOnnx(
  g: GraphBuilder,
  model: ResidualOnnxModel,
): { ids: string; x: string; mask: string } {
  const w = model.w;
  const ids = g.input('src_ids', 'int64', ['batch', 'src_len']);
  const lengths = g.input('src_lengths', 'int64', ['batch']);
  // src_mask [B, S] = position < length
  const S = g.op('Gather', [g.op('Shape', [ids]), g.constInt64(1)]);
  const positions = g.op('Range', [g.constInt64(0), S, g.constInt64(1)]);
  const mask = g.cast(g.op('Less', [g.unsqueeze(positions, [0]), g.unsqueeze(lengths, [1])]), 'float32');
  const E = g.initializer(w.joint ? 'decoder/embedding' : 'encoder/embedding', tensorValue(w.srcEmbedding));
  const sum = g.op('Add', [
    scaleEmbeddingOnnx(g, model.cfg, g.op('Gather', [E, ids])),
    positionVectorsOnnx(g, w.srcPositions, 'encoder/positions', positions),
  ]);
  const x = w.encoderEmbeddingNorm ? layerNormOnnx(g, w.encoderEmbeddingNorm, sum) : sum;
  return { ids, x, mask };
}

/** Embedding rows times the model's embedding scale (√d, or no node at all for a scale of 1). */
function scaleEmbeddingOnnx(g: GraphBuilder, cfg: ResidualConfig, rows: string): string {
  const scale = embeddingFactor(cfg);
  return scale === 1 ? rows : g.op('Mul', [rows, g.constFloat(scale)]);
}

/**
 * The encoder's outputs for the decoder's attention over the source: each layer's keys and values
 * (`cross_k_l`, `cross_v_l` [batch, heads, src_len, d/heads]) of the encoder output x, and `src_mask`.
 * Returns the first layer's keys.
 */
export function crossMemoryOnnx(g: GraphBuilder, model: ResidualOnnxModel, x: string, mask: string): string {
  let first = '';
  model.w.decoder.forEach(({ cross }, l) => {
    const dims = ['batch', cross.heads, 'src_len', cross.d / cross.heads];
    const k = projectHeadsOnnx(g, cross, 'k', x);
    g.output(k, `cross_k_${l}`, 'float32', dims);
    g.output(projectHeadsOnnx(g, cross, 'v', x), `cross_v_${l}`, 'float32', dims);
    if (l === 0) first = k;
  });
  g.output(mask, 'src_mask', 'float32', ['batch', 'src_len']);
  return first;
}

/** The decoder step's memory: each layer's source keys and values and the source mask, as inputs. */
export interface CrossMemory {
  cross: { k: string; v: string }[];
  mask: string;
  /** One memory row per source, the step's rows in equal groups per source (the card's `groupedMemory`). */
  grouped: boolean;
}

/** The decoder step's memory inputs: one row per step row, or with `grouped` one per source. */
export function crossMemoryInputs(g: GraphBuilder, model: ResidualOnnxModel, grouped = false): CrossMemory {
  const rows = grouped ? 'sources' : 'rows';
  const cross = model.w.decoder.map(({ cross: a }, l) => {
    const dims = [rows, a.heads, 'src_len', a.d / a.heads];
    return { k: g.input(`cross_k_${l}`, 'float32', dims), v: g.input(`cross_v_${l}`, 'float32', dims) };
  });
  return { cross, mask: g.input('src_mask', 'float32', [rows, 'src_len']), grouped };
}

/** Layer `l`'s attention from the step's rows h [rows, d] over the source: [rows, d]. */
export function crossAttentionStepOnnx(
  g: GraphBuilder,
  attention: MultiHeadAttentionWeights,
  h: string,
  memory: CrossMemory,
  srcBias: string,
  l: number,
): string {
  const { k, v } = memory.cross[l]!;
  return memory.grouped
    ? attendGroupedStepOnnx(g, attention, h, k, v, srcBias)
    : attendStepOnnx(g, attention, projectStepHeadsOnnx(g, attention, 'q', h), k, v, srcBias);
}

/**
 * The decoder step's input x = √d · E[prev_token] + P[position] [rows, d] for the `prev_token` input and an int64
 * `position` (a scalar or one per row), and the embedding matrix the head may score with (`embedding`).
 */
export function targetEmbeddingOnnx(
  g: GraphBuilder,
  model: ResidualOnnxModel,
  prev: string,
  position: string,
): { x: string; embedding: string } {
  // Heads that rescale E's rows store E once for both the lookup and the output projection.
  const shared = model.head.sharedEmbeddingOnnx?.(g);
  const embedding = shared?.matrix ?? g.initializer('decoder/embedding', tensorValue(model.w.tgtEmbedding));
  const e = shared ? shared.lookup(prev) : g.op('Gather', [embedding, prev]);
  const sum = g.op('Add', [
    scaleEmbeddingOnnx(g, model.cfg, e),
    positionVectorsOnnx(g, model.w.tgtPositions, 'decoder/positions', position),
  ]);
  const norm = model.w.decoderEmbeddingNorm;
  return { x: norm ? layerNormOnnx(g, norm, sum) : sum, embedding };
}

/** The step's end: the decoder output f [rows, d], the closing norm (pre-norm), the head, `log_probs` and top-k. */
export function stepLogProbsOnnx(
  g: GraphBuilder,
  model: ResidualOnnxModel,
  x: string,
  embedding: string,
  storeFrozen: boolean,
): void {
  const f = model.w.decoderNorm ? layerNormOnnx(g, model.w.decoderNorm, x) : x;
  const logits = g.scope('head', () => model.head.toOnnx(g, f, { embedding, storeFrozen }));
  emitStepLogProbs(g, logits, model.sizes.tgtVocab);
}
