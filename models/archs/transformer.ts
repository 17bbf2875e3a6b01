import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { SeededRandom } from '../../core/random.ts';
import { buildHead } from '../heads/index.ts';
import type { OutputHead } from '../heads/types.ts';
import { seededDropout } from '../layers/dropout.ts';
import { feedForward, type FeedForwardWeights } from '../layers/feed-forward.ts';
import { layerNorm, type LayerNormWeights } from '../layers/layer-norm.ts';
import { attendHeads, causalBias, keyPaddingBias, projectHeads } from '../layers/multi-head-attention.ts';
import { positionVectors, type PositionalEncoding } from '../layers/positional-encoding.ts';
import { headCrossEntropySum, type TokenLossOptions } from '../loss.ts';
import { ParamStore } from '../params.ts';
import { registerArch } from './registry.ts';
import { transformerOnnx } from './transformer-onnx.ts';
import { cacheNames, createWeights, type TransformerWeights } from './transformer-weights.ts';
import {
  expectBatch,
  expectInput,
  type EncoderInput,
  type ModelBatch,
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
  activation: z.enum(['relu', 'gelu']),
  positions: z.enum(['sinusoidal', 'learned']),
  /** Rows of a learned position table (the longest source or output); sinusoidal positions have no limit. */
  maxPositions: z.number().int().positive(),
});

/**
 * The encoder-decoder Transformer of Vaswani et al. (2017).
 *   embed:   x = √d · E[token] + P[position]                       (dropout)
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

export class TransformerModel implements Seq2SeqModel {
  readonly arch = 'transformer';
  readonly inputKind = 'tokens';
  readonly params: ParamStore;
  readonly head: OutputHead;
  readonly stateNames: string[];
  readonly memoryNames: string[];
  readonly w: TransformerWeights;
  private readonly dropoutRng: SeededRandom;

  constructor(
    readonly cfg: TransformerConfig,
    readonly sizes: ModelSizes & { srcVocab: number },
    headSpec: { name: string; options?: Record<string, unknown> },
    seed: number,
  ) {
    if (sizes.jointEmbedding && sizes.srcVocab !== sizes.tgtVocab) {
      throw new RangeError(
        `transformer: a joint embedding needs one vocabulary, got srcVocab ${sizes.srcVocab} and tgtVocab ${sizes.tgtVocab}`,
      );
    }
    const p = new ParamStore(seed);
    this.params = p;
    this.dropoutRng = new SeededRandom(seed, 'dropout');
    this.w = createWeights(p, cfg, sizes);
    ({ state: this.stateNames, memory: this.memoryNames } = cacheNames(cfg.decoderLayers));
    this.head = buildHead(
      headSpec.name,
      {
        vocabSize: sizes.tgtVocab,
        inputDim: cfg.model,
        embedding: this.w.tgtEmbedding,
        params: p,
        seed,
        dropout: cfg.dropout,
        excludedTargets: sizes.excludedTargets,
        compactOutput: sizes.compactOutput,
      },
      headSpec.options,
    );
  }

  private dropout<T extends tf.Tensor>(x: T, rate: number, training: boolean): T {
    // Seeded per call from the model's own stream, so a run is reproducible from its seed.
    return training && rate > 0 ? seededDropout(x, rate, this.dropoutRng.nextUint32()) : x;
  }

  /** √d · E[ids] + P[start …] for ids [B, L]. */
  private embed(E: tf.Tensor, pe: PositionalEncoding, ids: tf.Tensor2D, start: number, training: boolean) {
    const [B, L] = ids.shape;
    const d = this.cfg.model;
    const x = tf.reshape(tf.gather(E, tf.reshape(ids, [-1])), [B, L, d]);
    const summed = tf.add(tf.mul(x, Math.sqrt(d)), positionVectors(pe, start, L)) as tf.Tensor3D;
    return this.dropout(summed, this.cfg.dropout, training);
  }

  /** A residual block: post-norm LN(x + drop(F(x))), or pre-norm x + drop(F(LN(x))). */
  private residual(
    x: tf.Tensor3D,
    ln: LayerNormWeights,
    f: (h: tf.Tensor3D) => tf.Tensor3D,
    training: boolean,
  ): tf.Tensor3D {
    if (this.cfg.norm === 'pre') return tf.add(x, this.dropout(f(layerNorm(ln, x)), this.cfg.dropout, training));
    return layerNorm(ln, tf.add(x, this.dropout(f(x), this.cfg.dropout, training)));
  }

  private attnDropout(training: boolean) {
    return (a: tf.Tensor4D) => this.dropout(a, this.cfg.attentionDropout, training);
  }

  private feedForwardBlock(ff: FeedForwardWeights, training: boolean) {
    return (h: tf.Tensor3D) => feedForward(ff, h, (a) => this.dropout(a, this.cfg.activationDropout, training));
  }

  /** The encoder stack's output [B, S, d] and the padding mask [B, S]. */
  private encoderStack(ids: tf.Tensor2D, lengths: tf.Tensor1D, training: boolean) {
    const S = ids.shape[1];
    const positions = tf.expandDims(tf.range(0, S, 1, 'int32'), 0);
    const mask = tf.cast(tf.less(positions, tf.expandDims(lengths, 1)), 'float32') as tf.Tensor2D;
    const bias = keyPaddingBias(mask);
    let x = this.embed(this.w.srcEmbedding, this.w.srcPositions, ids, 0, training);
    for (const layer of this.w.encoder) {
      x = this.residual(
        x,
        layer.ln1,
        (h) => {
          const k = projectHeads(layer.self, 'k', h);
          const v = projectHeads(layer.self, 'v', h);
          return attendHeads(layer.self, h, k, v, bias, this.attnDropout(training));
        },
        training,
      );
      x = this.residual(x, layer.ln2, this.feedForwardBlock(layer.ff, training), training);
    }
    if (this.w.encoderNorm) x = layerNorm(this.w.encoderNorm, x);
    return { out: x, mask };
  }

  /** Per decoder layer, the source keys and values [B, h, S, d/h] of its attention over the encoder output. */
  private crossKeysValues(encOut: tf.Tensor3D): NamedTensors {
    const out: NamedTensors = {};
    this.w.decoder.forEach((layer, l) => {
      out[`cross_k_${l}`] = projectHeads(layer.cross, 'k', encOut);
      out[`cross_v_${l}`] = projectHeads(layer.cross, 'v', encOut);
    });
    return out;
  }

  /** The decoder stack over target positions start … start+L−1: its output [B, L, d]. */
  private decoderStack(
    x: tf.Tensor3D,
    selfKv: SelfKeysValues,
    selfBias: tf.Tensor | null,
    memory: NamedTensors,
    training: boolean,
  ): tf.Tensor3D {
    const srcBias = keyPaddingBias(memory.src_mask as tf.Tensor2D);
    this.w.decoder.forEach((layer, l) => {
      x = this.residual(
        x,
        layer.ln1,
        (h) => {
          const [k, v] = selfKv(h, l);
          return attendHeads(layer.self, h, k, v, selfBias, this.attnDropout(training));
        },
        training,
      );
      const crossK = memory[`cross_k_${l}`] as tf.Tensor4D;
      const crossV = memory[`cross_v_${l}`] as tf.Tensor4D;
      x = this.residual(
        x,
        layer.ln2,
        (h) => attendHeads(layer.cross, h, crossK, crossV, srcBias, this.attnDropout(training)),
        training,
      );
      x = this.residual(x, layer.ln3, this.feedForwardBlock(layer.ff, training), training);
    });
    return this.w.decoderNorm ? layerNorm(this.w.decoderNorm, x) : x;
  }

  /** The decoder's output [B, T, d] for every target position at once (teacher forcing, causal mask). */
  private forcedOutputs(src: tf.Tensor2D, srcLen: tf.Tensor1D, tgtIn: tf.Tensor2D, training: boolean): tf.Tensor3D {
    const { out, mask } = this.encoderStack(src, srcLen, training);
    const memory = { ...this.crossKeysValues(out), src_mask: mask };
    const T = tgtIn.shape[1];
    const y = this.embed(this.w.tgtEmbedding, this.w.tgtPositions, tgtIn, 0, training);
    const selfKv: SelfKeysValues = (h, l) => [
      projectHeads(this.w.decoder[l].self, 'k', h),
      projectHeads(this.w.decoder[l].self, 'v', h),
    ];
    return this.decoderStack(y, selfKv, causalBias(T), memory, training);
  }

  lossSum(modelBatch: ModelBatch, training: boolean, loss?: TokenLossOptions): tf.Scalar {
    const batch = expectBatch(this.arch, 'tokens', modelBatch);
    return tf.tidy(() => {
      const { B, S, T } = batch;
      const out = this.forcedOutputs(
        tf.tensor2d(batch.src, [B, S], 'int32'),
        tf.tensor1d(batch.srcLen, 'int32'),
        tf.tensor2d(batch.tgtIn, [B, T], 'int32'),
        training,
      );
      // Only the positions that count reach the head, the largest matrix product.
      const rows: number[] = [];
      for (let i = 0; i < B * T; i++) if (batch.tgtMask[i] > 0) rows.push(i);
      const index = tf.tensor1d(rows, 'int32');
      const f = tf.gather(tf.reshape(out, [B * T, this.cfg.model]), index) as tf.Tensor2D;
      const targets = tf.gather(tf.tensor1d(batch.tgtOut, 'int32'), index) as tf.Tensor1D;
      const weights = tf.gather(tf.tensor1d(batch.tgtMask, 'float32'), index) as tf.Tensor1D;
      return headCrossEntropySum(this.head, f, targets, weights, training, loss);
    });
  }

  /**
   * Log-probabilities [B, T, |V|] of every target position at once, as training computes them (the
   * uncached decoder): what step-by-step decoding with the cache must reproduce.
   */
  forcedLogProbs(src: tf.Tensor2D, srcLen: tf.Tensor1D, tgtIn: tf.Tensor2D): tf.Tensor3D {
    return tf.tidy(() => {
      const [B, T] = tgtIn.shape;
      const out = this.forcedOutputs(src, srcLen, tgtIn, false);
      const logits = this.head.logits(tf.reshape(out, [B * T, this.cfg.model]) as tf.Tensor2D, false);
      return tf.reshape(tf.logSoftmax(logits, 1), [B, T, -1]) as tf.Tensor3D;
    });
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
      const x = this.embed(this.w.tgtEmbedding, this.w.tgtPositions, tf.reshape(prev, [N, 1]), position, false);
      const state: NamedTensors = {};
      const selfKv: SelfKeysValues = (h, l) => {
        const self = this.w.decoder[l].self;
        const k = tf.concat([inputs[`self_k_${l}`] as tf.Tensor4D, projectHeads(self, 'k', h)], 2);
        const v = tf.concat([inputs[`self_v_${l}`] as tf.Tensor4D, projectHeads(self, 'v', h)], 2);
        state[`self_k_${l}`] = k;
        state[`self_v_${l}`] = v;
        return [k, v];
      };
      const out = this.decoderStack(x, selfKv, null, inputs, false);
      const logits = this.head.logits(tf.reshape(out, [N, this.cfg.model]) as tf.Tensor2D, false);
      return { logProbs: tf.logSoftmax(logits, 1), state };
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
