import type * as tf from '@tensorflow/tfjs-core';
import { createFeedForward, type FeedForwardWeights } from '../layers/feed-forward.ts';
import { createLayerNorm, type LayerNormWeights } from '../layers/layer-norm.ts';
import { createMultiHeadAttention, type MultiHeadAttentionWeights } from '../layers/multi-head-attention.ts';
import { createPositionalEncoding, type PositionalEncoding } from '../layers/positional-encoding.ts';
import type { ParamStore } from '../params.ts';
import type { TransformerConfig } from './transformer.ts';
import type { ModelSizes } from './types.ts';

/** The Transformer's parameters (transformer.ts), by layer, and the names of its decoder's state and memory. */
export interface EncoderLayerWeights {
  self: MultiHeadAttentionWeights;
  ln1: LayerNormWeights;
  ff: FeedForwardWeights;
  ln2: LayerNormWeights;
}

export interface DecoderLayerWeights {
  self: MultiHeadAttentionWeights;
  ln1: LayerNormWeights;
  cross: MultiHeadAttentionWeights;
  ln2: LayerNormWeights;
  ff: FeedForwardWeights;
  ln3: LayerNormWeights;
}

export interface TransformerWeights {
  srcEmbedding: tf.Variable;
  tgtEmbedding: tf.Variable;
  /** Whether srcEmbedding is tgtEmbedding (a joint vocabulary). */
  joint: boolean;
  srcPositions: PositionalEncoding;
  tgtPositions: PositionalEncoding;
  encoder: EncoderLayerWeights[];
  decoder: DecoderLayerWeights[];
  /** With norm=pre: the layer norms that end each stack. */
  encoderNorm?: LayerNormWeights;
  decoderNorm?: LayerNormWeights;
}

/** The names of the decoder's state (self-attention caches) and memory (source keys and values, mask). */
export function cacheNames(layers: number): { state: string[]; memory: string[] } {
  const state: string[] = [];
  const memory: string[] = [];
  for (let l = 0; l < layers; l++) {
    state.push(`self_k_${l}`, `self_v_${l}`);
    memory.push(`cross_k_${l}`, `cross_v_${l}`);
  }
  memory.push('src_mask');
  return { state, memory };
}

export function createWeights(p: ParamStore, cfg: TransformerConfig, sizes: ModelSizes & { srcVocab: number }) {
  const d = cfg.model;
  // Vaswani: embeddings are scaled by √d, so rows start with norm ≈ 1 after scaling (std d^-½ before).
  const emb = { kind: 'uniform', limit: Math.sqrt(3 / d) } as const;
  const tgtEmbedding = p.variable('decoder/embedding', [sizes.tgtVocab, d], emb);
  const joint = sizes.jointEmbedding ?? false;
  const srcEmbedding = joint ? tgtEmbedding : p.variable('encoder/embedding', [sizes.srcVocab, d], emb);
  const encoder = Array.from({ length: cfg.encoderLayers }, (_, l): EncoderLayerWeights => {
    const n = `encoder/layer${l}`;
    return {
      self: createMultiHeadAttention(p, `${n}/self`, d, cfg.heads),
      ln1: createLayerNorm(p, `${n}/ln1`, d),
      ff: createFeedForward(p, `${n}/ff`, d, cfg.ff, cfg.activation),
      ln2: createLayerNorm(p, `${n}/ln2`, d),
    };
  });
  const decoder = Array.from({ length: cfg.decoderLayers }, (_, l): DecoderLayerWeights => {
    const n = `decoder/layer${l}`;
    return {
      self: createMultiHeadAttention(p, `${n}/self`, d, cfg.heads),
      ln1: createLayerNorm(p, `${n}/ln1`, d),
      cross: createMultiHeadAttention(p, `${n}/cross`, d, cfg.heads),
      ln2: createLayerNorm(p, `${n}/ln2`, d),
      ff: createFeedForward(p, `${n}/ff`, d, cfg.ff, cfg.activation),
      ln3: createLayerNorm(p, `${n}/ln3`, d),
    };
  });
  const pre = cfg.norm === 'pre';
  return {
    srcEmbedding,
    tgtEmbedding,
    joint,
    srcPositions: createPositionalEncoding(p, 'encoder/positions', cfg.positions, d, cfg.maxPositions),
    tgtPositions: createPositionalEncoding(p, 'decoder/positions', cfg.positions, d, cfg.maxPositions),
    encoder,
    decoder,
    ...(pre
      ? { encoderNorm: createLayerNorm(p, 'encoder/norm', d), decoderNorm: createLayerNorm(p, 'decoder/norm', d) }
      : {}),
  };
}
