import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { attendHeads, causalBias, keyPaddingBias, projectHeads } from '../layers/multi-head-attention.ts';
import { positionVectors } from '../layers/positional-encoding.ts';
import { registerArch } from './registry.ts';
import { ResidualSeq2Seq, type Mixer } from './residual-seq2seq.ts';
import { transformerOnnx } from './transformer-onnx.ts';
import { cacheNames, createWeights, type TransformerWeights } from './transformer-weights.ts';
import {
  expectInput,
  type EncoderInput,
  type ModelSizes,
  type NamedTensors,
  type Seq2SeqModel,
  type OnnxGraphOptions,
} from './types.ts';

const settings = z.strictObject({
  encoderLayers: z.number().int().positive(),
  decoderLayers: z.number().int().positive(),
  /** d, the model size (embeddings, every layer's input and output, the vector the head scores). */
  model: z.number().int().positive(),
  heads: z.number().int().positive(),
  /** Inner size of the feed-forward blocks. */
  ff: z.number().int().positive(),
  /** Dropout on embeddings+positions and on every residual branch. */
  dropout: z.number().min(0).lt(1),
  /** Dropout on the attention weights. */
  attentionDropout: z.number().min(0).lt(1),
  /** Dropout on the feed-forward blocks' hidden activations. */
  activationDropout: z.number().min(0).lt(1),
  norm: z.enum(['post', 'pre']),
  /** The feed-forward blocks' activation: ReLU, exact GELU, or swish (SiLU, x·σ(x): Marian's). */
  activation: z.enum(['relu', 'gelu', 'swish']),
  /**
   * Sinusoidal positions are frost's concatenated layout (sin in the first half, cos in the second, from position 0),
   * which is also Marian's (Hugging Face's MarianSinusoidalPositionalEmbedding); `sinusoidal-fairseq` is fairseq's
   * (ω_i = 10000^(−i/(d/2−1)), the first token at position 2: models/layers/positional-encoding.ts).
   */
  positions: z.enum(['sinusoidal', 'sinusoidal-fairseq', 'learned']),
  /** Rows of a learned position table (the longest source or output); sinusoidal positions have no limit. */
  maxPositions: z.number().int().positive(),
  /**
   * The token embeddings' scale before the positions are added: `sqrt-d` (Vaswani et al., what absent means) or
   * `none` (Marian's `scale_embedding: false`).
   */
  embeddingScale: z.enum(['sqrt-d', 'none']).optional(),
  /**
   * A layer norm over the embedded tokens (after the positions are added, before dropout), one per stack: fairseq's
   * `layernorm_embedding`. Absent: none.
   */
  layernormEmbedding: z.boolean().optional(),
});

/**
 * The encoder-decoder Transformer of Vaswani et al. (2017).
 *   embed:   x = √d · E[token] + P[position]  (√d: 1 with embeddingScale=none)  (LN with layernormEmbedding)  (dropout)
 *   encoder: N × [self-attention, feed-forward], each a residual block
 *   decoder: N × [causal self-attention, attention over the encoder output, feed-forward]
 *   f = the last decoder layer's output (layer-normalised with norm=pre) → the output head scores f.
 * A residual block is LN(x + dropout(F(x))) (post-norm, the paper's) or x + dropout(F(LN(x)))
 * (pre-norm, Wang et al. 2019; then one more LN ends each stack).
 *
 * Decoding is incremental: the decoder's state is each layer's self-attention keys and values for
 * the positions decoded so far, [rows, heads, t, d/heads], which a step extends by one position;
 * the keys and values of the attention over the source are computed once, by the encoder, and are
 * per-row memory. See docs/transformer.md.
 */
export type TransformerConfig = z.infer<typeof settings>;

const common = { norm: 'post', activation: 'relu', positions: 'sinusoidal', maxPositions: 256 } as const;
const presets: Record<string, TransformerConfig> = {
  // Pre-norm: trains stably at a constant learning rate, with no warm-up (Xiong et al. 2020).
  tiny: {
    ...common,
    norm: 'pre',
    encoderLayers: 2,
    decoderLayers: 2,
    model: 64,
    heads: 4,
    ff: 128,
    dropout: 0,
    attentionDropout: 0,
    activationDropout: 0,
  },
  small: {
    ...common,
    encoderLayers: 3,
    decoderLayers: 3,
    model: 256,
    heads: 4,
    ff: 1024,
    dropout: 0.1,
    attentionDropout: 0.1,
    activationDropout: 0,
  },
  // fairseq's transformer_iwslt_de_en, the model of seed 003 (Liu et al.).
  iwslt: {
    ...common,
    encoderLayers: 6,
    decoderLayers: 6,
    model: 512,
    heads: 4,
    ff: 1024,
    dropout: 0.3,
    attentionDropout: 0,
    activationDropout: 0,
  },
  base: {
    ...common,
    encoderLayers: 6,
    decoderLayers: 6,
    model: 512,
    heads: 8,
    ff: 2048,
    dropout: 0.1,
    attentionDropout: 0,
    activationDropout: 0,
  },
};

/** Keys and values of one decoder layer's self-attention: the positions so far. */
type SelfKeysValues = (h: tf.Tensor3D, layer: number) => [tf.Tensor4D, tf.Tensor4D];

export class TransformerModel extends ResidualSeq2Seq<TransformerConfig, TransformerWeights> implements Seq2SeqModel {
  declare readonly arch: 'transformer';
  readonly stateNames: string[];
  readonly memoryNames: string[];

  constructor(
    cfg: TransformerConfig,
    sizes: ModelSizes & { srcVocab: number },
    headSpec: { name: string; options?: Record<string, unknown> },
    seed: number,
  ) {
    super('transformer', cfg, sizes, headSpec, seed, (p) => createWeights(p, cfg, sizes));
    ({ state: this.stateNames, memory: this.memoryNames } = cacheNames(cfg.decoderLayers));
  }

  /** The encoder stack's output [B, S, d] and the padding mask [B, S]. */
  private encoderStack(ids: tf.Tensor2D, lengths: tf.Tensor1D, training: boolean) {
    const S = ids.shape[1];
    const mask = this.sourceMask(S, lengths);
    const bias = keyPaddingBias(mask);
    const x = this.embedSource(ids, training);
    const selfAttention: Mixer = (h, l) => {
      const self = this.w.encoder[l].self;
      const k = projectHeads(self, 'k', h);
      const v = projectHeads(self, 'v', h);
      return attendHeads(self, h, k, v, bias, this.attnDropout(training));
    };
    return { out: this.encoderLayers(x, selfAttention, training), mask };
  }

  /** The decoder's self-attention over the keys and values `selfKv` gives (the positions so far). */
  private selfAttention(selfKv: SelfKeysValues, bias: tf.Tensor | null, training: boolean): Mixer {
    return (h, l) => {
      const [k, v] = selfKv(h, l);
      return attendHeads(this.w.decoder[l].self, h, k, v, bias, this.attnDropout(training));
    };
  }

  protected forcedOutputs(src: tf.Tensor2D, srcLen: tf.Tensor1D, tgtIn: tf.Tensor2D, training: boolean): tf.Tensor3D {
    const { out, mask } = this.encoderStack(src, srcLen, training);
    const memory = { ...this.crossKeysValues(out), src_mask: mask };
    const T = tgtIn.shape[1];
    const y = this.embedTarget(tgtIn, positionVectors(this.w.tgtPositions, 0, T), training);
    const selfKv: SelfKeysValues = (h, l) => [
      projectHeads(this.w.decoder[l].self, 'k', h),
      projectHeads(this.w.decoder[l].self, 'v', h),
    ];
    return this.decoderLayers(y, this.selfAttention(selfKv, causalBias(T), training), memory, training);
  }

  encode(input: EncoderInput): NamedTensors {
    const { ids, lengths } = expectInput(this.arch, 'tokens', input);
    return tf.tidy(() => {
      const B = ids.shape[0];
      const { heads, model: d } = this.cfg;
      const { out, mask } = this.encoderStack(ids, lengths, false);
      const named: NamedTensors = { ...this.crossKeysValues(out), src_mask: mask };
      // The caches start empty: no position decoded yet.
      for (const name of this.stateNames) named[name] = tf.zeros([B, heads, 0, d / heads]);
      return named;
    });
  }

  step(prev: tf.Tensor1D, inputs: NamedTensors): { logProbs: tf.Tensor2D; state: NamedTensors } {
    return tf.tidy(() => {
      const N = prev.shape[0];
      const position = inputs.self_k_0.shape[2] as number;
      const positions = positionVectors(this.w.tgtPositions, position, 1);
      const x = this.embedTarget(tf.reshape(prev, [N, 1]), positions, false);
      const state: NamedTensors = {};
      const selfKv: SelfKeysValues = (h, l) => {
        const self = this.w.decoder[l].self;
        const k = tf.concat([inputs[`self_k_${l}`] as tf.Tensor4D, projectHeads(self, 'k', h)], 2);
        const v = tf.concat([inputs[`self_v_${l}`] as tf.Tensor4D, projectHeads(self, 'v', h)], 2);
        state[`self_k_${l}`] = k;
        state[`self_v_${l}`] = v;
        return [k, v];
      };
      const out = this.decoderLayers(x, this.selfAttention(selfKv, null, false), inputs, false);
      return { logProbs: this.stepLogProbs(out), state };
    });
  }

  toOnnx(opts: OnnxGraphOptions = {}) {
    return transformerOnnx(this, opts);
  }
}

registerArch<TransformerConfig>({
  name: 'transformer',
  summary: 'Vaswani et al.: self-attention encoder and decoder, multi-head attention, key/value-cached decoding',
  // fairseq's transformer_iwslt_de_en recipe (seed 003): label smoothing 0.1, Adam β₂ 0.98,
  // 4000 warm-up updates to 5e-4 then inverse square root, 4096-token batches, no clipping.
  recipe: {
    labelSmoothing: 0.1,
    learningRate: 5e-4,
    adamBetas: [0.9, 0.98],
    clipNorm: 0,
    lrSchedule: 'inverse-sqrt',
    warmupSteps: 4000,
    maxTokens: 4096,
  },
  jointVocabulary: true,
  selfAttentionCaches: true,
  tasks: ['translation'],
  inputKind: 'tokens',
  presets,
  settings,
  build: (config, sizes, head, seed) => {
    if (sizes.srcVocab === undefined)
      throw new TypeError('transformer needs a source vocabulary size (sizes.srcVocab)');
    return new TransformerModel(config, { ...sizes, srcVocab: sizes.srcVocab }, head, seed);
  },
});
