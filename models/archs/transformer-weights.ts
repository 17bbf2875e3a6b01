import { createFeedForward, type FeedForwardWeights } from '../layers/feed-forward.ts';
import { createLayerNorm, type LayerNormWeights } from '../layers/layer-norm.ts';
import { createMultiHeadAttention, type MultiHeadAttentionWeights } from '../layers/multi-head-attention.ts';
import type { ParamStore } from '../params.ts';
import { createResidualWeights, crossMemoryNames, type ResidualWeights } from './residual-seq2seq.ts';
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

export interface TransformerWeights extends ResidualWeights {
  encoder: EncoderLayerWeights[];
  decoder: DecoderLayerWeights[];
}

/** The names of the decoder's state (self-attention caches) and memory (source keys and values, mask). */
export function cacheNames(layers: number): { state: string[]; memory: string[] } {
  const state: string[] = [];
  for (let l = 0; l < layers; l++) state.push(`self_k_${l}`, `self_v_${l}`);
  return { state, memory: crossMemoryNames(layers) };
}

export function createWeights(
  p: ParamStore,
  cfg: TransformerConfig,
  sizes: ModelSizes & { srcVocab: number },
): TransformerWeights {
  const d = cfg.model;
  return createResidualWeights(p, cfg, sizes, () => ({
    encoder: Array.from({ length: cfg.encoderLayers }, (_, l): EncoderLayerWeights => {
      const n = `encoder/layer${l}`;
      return {
        self: createMultiHeadAttention(p, `${n}/self`, d, cfg.heads),
        ln1: createLayerNorm(p, `${n}/ln1`, d),
        ff: createFeedForward(p, `${n}/ff`, d, cfg.ff, cfg.activation),
        ln2: createLayerNorm(p, `${n}/ln2`, d),
      };
    }),
    decoder: Array.from({ length: cfg.decoderLayers }, (_, l): DecoderLayerWeights => {
      const n = `decoder/layer${l}`;
      return {
        self: createMultiHeadAttention(p, `${n}/self`, d, cfg.heads),
        ln1: createLayerNorm(p, `${n}/ln1`, d),
        cross: createMultiHeadAttention(p, `${n}/cross`, d, cfg.heads),
        ln2: createLayerNorm(p, `${n}/ln2`, d),
        ff: createFeedForward(p, `${n}/ff`, d, cfg.ff, cfg.activation),
        ln3: createLayerNorm(p, `${n}/ln3`, d),
      };
    }),
  }));
}
