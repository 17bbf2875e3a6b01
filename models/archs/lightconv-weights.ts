import { createFeedForward, type FeedForwardWeights } from '../layers/feed-forward.ts';
import { createLayerNorm, type LayerNormWeights } from '../layers/layer-norm.ts';
import { createConvBlock, type ConvBlockWeights, type ConvKind } from '../layers/lightconv-block.ts';
import { createMultiHeadAttention, type MultiHeadAttentionWeights } from '../layers/multi-head-attention.ts';
import type { ParamStore } from '../params.ts';
import type { LightConvConfig } from './lightconv.ts';
import { createResidualWeights, crossMemoryNames, type ResidualWeights } from './residual-seq2seq.ts';
import type { ModelSizes } from './types.ts';

/** LightConv's and DynamicConv's parameters (lightconv.ts), by layer, and the names of the decoder's state. */
export interface EncoderLayerWeights {
  conv: ConvBlockWeights;
  ln1: LayerNormWeights;
  ff: FeedForwardWeights;
  ln2: LayerNormWeights;
}

export interface DecoderLayerWeights {
  /** Causal: it takes the place of the Transformer's self-attention. */
  conv: ConvBlockWeights;
  ln1: LayerNormWeights;
  cross: MultiHeadAttentionWeights;
  ln2: LayerNormWeights;
  ff: FeedForwardWeights;
  ln3: LayerNormWeights;
}

export interface LightConvWeights extends ResidualWeights {
  encoder: EncoderLayerWeights[];
  decoder: DecoderLayerWeights[];
}

/**
 * The decoder's state: `position` [B] (int32, the position being decoded) and, for each layer l whose kernel is
 * wider than 1, `conv_window_l` [B, K − 1, d] (its convolution's last K − 1 inputs); its memory: the Transformer's.
 */
export function lightconvCacheNames(decoderKernels: readonly number[]): { state: string[]; memory: string[] } {
  const windows = decoderKernels.flatMap((K, l) => (K > 1 ? [`conv_window_${l}`] : []));
  return { state: ['position', ...windows], memory: crossMemoryNames(decoderKernels.length) };
}

export function createLightConvWeights(
  p: ParamStore,
  cfg: LightConvConfig,
  sizes: ModelSizes & { srcVocab: number },
  kind: ConvKind,
): LightConvWeights {
  const d = cfg.model;
  const block = (name: string, width: number) =>
    createConvBlock(p, name, { kind, d, heads: cfg.heads, width, glu: cfg.glu });
  return createResidualWeights(p, cfg, sizes, () => ({
    encoder: cfg.encoderKernels.map((K, l): EncoderLayerWeights => {
      const n = `encoder/layer${l}`;
      return {
        conv: block(`${n}/conv`, K),
        ln1: createLayerNorm(p, `${n}/ln1`, d),
        ff: createFeedForward(p, `${n}/ff`, d, cfg.ff, 'relu'),
        ln2: createLayerNorm(p, `${n}/ln2`, d),
      };
    }),
    decoder: cfg.decoderKernels.map((K, l): DecoderLayerWeights => {
      const n = `decoder/layer${l}`;
      return {
        conv: block(`${n}/conv`, K),
        ln1: createLayerNorm(p, `${n}/ln1`, d),
        cross: createMultiHeadAttention(p, `${n}/cross`, d, cfg.heads),
        ln2: createLayerNorm(p, `${n}/ln2`, d),
        ff: createFeedForward(p, `${n}/ff`, d, cfg.ff, 'relu'),
        ln3: createLayerNorm(p, `${n}/ln3`, d),
      };
    }),
  }));
}
