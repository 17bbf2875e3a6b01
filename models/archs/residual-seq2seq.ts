import * as tf from '@tensorflow/tfjs-core';
import { SeededRandom } from '../../core/random.ts';
import { buildHead } from '../heads/index.ts';
import type { OutputHead } from '../heads/types.ts';
import { seededDropout } from '../layers/dropout.ts';
import { feedForward, type FeedForwardWeights } from '../layers/feed-forward.ts';
import { createLayerNorm, layerNorm, type LayerNormWeights } from '../layers/layer-norm.ts';
import {
  attendHeads,
  keyPaddingBias,
  projectHeads,
  type MultiHeadAttentionWeights,
} from '../layers/multi-head-attention.ts';
import {
  createPositionalEncoding,
  positionVectors,
  type PositionalEncoding,
  type PositionKind,
} from '../layers/positional-encoding.ts';
import { headCrossEntropySum, type TokenLossOptions } from '../loss.ts';
import { ParamStore } from '../params.ts';
import { expectBatch, type ModelBatch, type ModelSizes, type NamedTensors } from './types.ts';

/** The settings every residual encoder-decoder reads here (transformer.ts, lightconv.ts declare the rest). */
export interface ResidualConfig {
  /** d: embeddings, every layer's input and output, the vector the head scores. */
  model: number;
  dropout: number;
  attentionDropout: number;
  activationDropout: number;
  norm: 'post' | 'pre';
  positions: PositionKind;
  /** Rows of a learned position table. */
  maxPositions: number;
  /**
   * What the token embeddings are multiplied by before the positions are added: √d (Vaswani et al.; absent means
   * this) or 1 (`none`: Marian's `scale_embedding: false`).
   */
  embeddingScale?: EmbeddingScale;
  /** A layer norm over each stack's embedded tokens, before dropout (fairseq's `layernorm_embedding`). */
  layernormEmbedding?: boolean;
}

/** The embedding scale setting: `sqrt-d` multiplies by √d, `none` by 1. */
export type EmbeddingScale = 'sqrt-d' | 'none';

/** The factor {@link ResidualConfig.embeddingScale} names, the same in tfjs and in the graphs. */
export function embeddingFactor(cfg: Pick<ResidualConfig, 'model' | 'embeddingScale'>): number {
  return cfg.embeddingScale === 'none' ? 1 : Math.sqrt(cfg.model);
}

/** An encoder layer: a block that mixes positions (ln1, the architecture's own), then a feed-forward block (ln2). */
export interface EncoderLayerBase {
  ln1: LayerNormWeights;
  ff: FeedForwardWeights;
  ln2: LayerNormWeights;
}

/** A decoder layer: a causal mixing block (ln1), attention over the encoder output (ln2), feed-forward (ln3). */
export interface DecoderLayerBase {
  ln1: LayerNormWeights;
  cross: MultiHeadAttentionWeights;
  ln2: LayerNormWeights;
  ff: FeedForwardWeights;
  ln3: LayerNormWeights;
}

/** A layer's block that mixes positions (self-attention, a convolution): h [B, L, d] → [B, L, d]. */
export type Mixer = (h: tf.Tensor3D, layer: number) => tf.Tensor3D;

/** The parameters every residual encoder-decoder has, whatever its layers do between them. */
export interface ResidualWeights {
  srcEmbedding: tf.Variable;
  tgtEmbedding: tf.Variable;
  /** Whether srcEmbedding is tgtEmbedding (a joint vocabulary). */
  joint: boolean;
  srcPositions: PositionalEncoding;
  tgtPositions: PositionalEncoding;
  encoder: readonly EncoderLayerBase[];
  decoder: readonly DecoderLayerBase[];
  /** With norm=pre: the layer norms that end each stack. */
  encoderNorm?: LayerNormWeights;
  decoderNorm?: LayerNormWeights;
  /** With layernormEmbedding: the layer norms over each stack's embedded tokens. */
  encoderEmbeddingNorm?: LayerNormWeights;
  decoderEmbeddingNorm?: LayerNormWeights;
}

/**
 * The parameters of {@link ResidualWeights} that are not a layer's: the embeddings (one matrix for a joint
 * vocabulary), the positions and, with norm=pre, the layer norms that end the stacks. `layers` makes the layers'
 * parameters after the embeddings and before the rest: the order the Transformer's have always been made in.
 */
export function createResidualWeights<Layers extends Pick<ResidualWeights, 'encoder' | 'decoder'>>(
  p: ParamStore,
  cfg: ResidualConfig,
  sizes: ModelSizes & { srcVocab: number },
  layers: () => Layers,
): Omit<ResidualWeights, 'encoder' | 'decoder'> & Layers {
  const d = cfg.model;
  // Vaswani: embeddings are scaled by √d, so rows start with norm ≈ 1 after scaling (std d^-½ before).
  const emb = { kind: 'uniform', limit: Math.sqrt(3 / d) } as const;
  const tgtEmbedding = p.variable('decoder/embedding', [sizes.tgtVocab, d], emb);
  const joint = sizes.jointEmbedding ?? false;
  const srcEmbedding = joint ? tgtEmbedding : p.variable('encoder/embedding', [sizes.srcVocab, d], emb);
  const stacks = layers();
  return {
    srcEmbedding,
    tgtEmbedding,
    joint,
    srcPositions: createPositionalEncoding(p, 'encoder/positions', cfg.positions, d, cfg.maxPositions),
    tgtPositions: createPositionalEncoding(p, 'decoder/positions', cfg.positions, d, cfg.maxPositions),
    ...stacks,
    ...(cfg.norm === 'pre'
      ? { encoderNorm: createLayerNorm(p, 'encoder/norm', d), decoderNorm: createLayerNorm(p, 'decoder/norm', d) }
      : {}),
    // Made last, so models without it keep every other parameter's initial values.
    ...(cfg.layernormEmbedding
      ? {
          encoderEmbeddingNorm: createLayerNorm(p, 'encoder/embedding_norm', d),
          decoderEmbeddingNorm: createLayerNorm(p, 'decoder/embedding_norm', d),
        }
      : {}),
  };
}

/** The decoder's per-row memory: each layer's source keys and values (`cross_k_l`, `cross_v_l`), the source mask. */
export function crossMemoryNames(layers: number): string[] {
  const memory: string[] = [];
  for (let l = 0; l < layers; l++) memory.push(`cross_k_${l}`, `cross_v_${l}`);
  memory.push('src_mask');
  return memory;
}

/**
 * What the Transformer (transformer.ts) and LightConv/DynamicConv (lightconv.ts) share: embeddings √d · E + P with
 * dropout, one embedding matrix for a joint vocabulary (which tied and shared heads score with), residual blocks
 * (post-norm LN(x + drop(F(x))) or pre-norm x + drop(F(LN(x)))), the attention over the encoder output with its
 * keys and values as per-row memory, and the loss over the real target positions only. A subclass says what its
 * encoder and decoder layers are (`forcedOutputs`) and how it decodes step by step.
 */
export abstract class ResidualSeq2Seq<Config extends ResidualConfig, Weights extends ResidualWeights> {
  readonly inputKind = 'tokens';
  readonly params: ParamStore;
  readonly head: OutputHead;
  readonly w: Weights;
  private readonly dropoutRng: SeededRandom;

  constructor(
    readonly arch: string,
    readonly cfg: Config,
    readonly sizes: ModelSizes & { srcVocab: number },
    headSpec: { name: string; options?: Record<string, unknown> },
    seed: number,
    createWeights: (p: ParamStore) => Weights,
  ) {
    if (sizes.jointEmbedding && sizes.srcVocab !== sizes.tgtVocab) {
      throw new RangeError(
        `${arch}: a joint embedding needs one vocabulary, got srcVocab ${sizes.srcVocab} and tgtVocab ${sizes.tgtVocab}`,
      );
    }
    const p = new ParamStore(seed);
    this.params = p;
    this.dropoutRng = new SeededRandom(seed, 'dropout');
    this.w = createWeights(p);
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

  /**
   * The decoder's output [B, T, d] for every target position at once (teacher forcing): what training scores and
   * what step-by-step decoding must reproduce.
   */
  protected abstract forcedOutputs(
    src: tf.Tensor2D,
    srcLen: tf.Tensor1D,
    tgtIn: tf.Tensor2D,
    training: boolean,
  ): tf.Tensor3D;

  protected dropout<T extends tf.Tensor>(x: T, rate: number, training: boolean): T {
    // Seeded per call from the model's own stream, so a run is reproducible from its seed.
    return training && rate > 0 ? seededDropout(x, rate, this.dropoutRng.nextUint32()) : x;
  }

  /** The embedded source ids [B, S]: s · E[ids] + P[0 … S−1], then the encoder's embedding norm where it has one. */
  protected embedSource(ids: tf.Tensor2D, training: boolean): tf.Tensor3D {
    const P = positionVectors(this.w.srcPositions, 0, ids.shape[1]);
    return this.embed(this.w.srcEmbedding, ids, P, training, this.w.encoderEmbeddingNorm);
  }

  /** The embedded target ids [B, T] at `positions` (broadcasting to [B, T, d]), then the decoder's embedding norm. */
  protected embedTarget(ids: tf.Tensor2D, positions: tf.Tensor, training: boolean): tf.Tensor3D {
    return this.embed(this.w.tgtEmbedding, ids, positions, training, this.w.decoderEmbeddingNorm);
  }

  /**
   * s · E[ids] + positions for ids [B, L] (s: √d, or 1 with embeddingScale none); positions broadcast to [B, L, d];
   * then `norm` (layernormEmbedding) where given.
   */
  private embed(
    E: tf.Tensor,
    ids: tf.Tensor2D,
    positions: tf.Tensor,
    training: boolean,
    norm?: LayerNormWeights,
  ): tf.Tensor3D {
    const [B, L] = ids.shape;
    const d = this.cfg.model;
    const x = tf.reshape(tf.gather(E, tf.reshape(ids, [-1])), [B, L, d]);
    const scale = embeddingFactor(this.cfg);
    const scaled = scale === 1 ? x : tf.mul(x, scale);
    const sum = tf.add(scaled, positions) as tf.Tensor3D;
    return this.dropout(norm ? layerNorm(norm, sum) : sum, this.cfg.dropout, training);
  }

  /** A residual block: post-norm LN(x + drop(F(x))), or pre-norm x + drop(F(LN(x))). */
  protected residual(
    x: tf.Tensor3D,
    ln: LayerNormWeights,
    f: (h: tf.Tensor3D) => tf.Tensor3D,
    training: boolean,
  ): tf.Tensor3D {
    if (this.cfg.norm === 'pre') return tf.add(x, this.dropout(f(layerNorm(ln, x)), this.cfg.dropout, training));
    return layerNorm(ln, tf.add(x, this.dropout(f(x), this.cfg.dropout, training)));
  }

  protected attnDropout(training: boolean) {
    return (a: tf.Tensor4D) => this.dropout(a, this.cfg.attentionDropout, training);
  }

  protected feedForwardBlock(ff: FeedForwardWeights, training: boolean) {
    return (h: tf.Tensor3D) => feedForward(ff, h, (a) => this.dropout(a, this.cfg.activationDropout, training));
  }

  /** The padding mask [B, S] of sources of these lengths: 1 at a real token. */
  protected sourceMask(S: number, lengths: tf.Tensor1D): tf.Tensor2D {
    const positions = tf.expandDims(tf.range(0, S, 1, 'int32'), 0);
    return tf.cast(tf.less(positions, tf.expandDims(lengths, 1)), 'float32') as tf.Tensor2D;
  }

  /** Per decoder layer, the source keys and values [B, h, S, d/h] of its attention over the encoder output. */
  protected crossKeysValues(encOut: tf.Tensor3D): NamedTensors {
    const out: NamedTensors = {};
    this.w.decoder.forEach((layer, l) => {
      out[`cross_k_${l}`] = projectHeads(layer.cross, 'k', encOut);
      out[`cross_v_${l}`] = projectHeads(layer.cross, 'v', encOut);
    });
    return out;
  }

  /** The encoder's layers over x [B, S, d], `mix` each one's first block; with norm=pre, the closing layer norm. */
  protected encoderLayers(x: tf.Tensor3D, mix: Mixer, training: boolean): tf.Tensor3D {
    this.w.encoder.forEach((layer, l) => {
      x = this.residual(x, layer.ln1, (h) => mix(h, l), training);
      x = this.residual(x, layer.ln2, this.feedForwardBlock(layer.ff, training), training);
    });
    return this.w.encoderNorm ? layerNorm(this.w.encoderNorm, x) : x;
  }

  /**
   * The decoder's layers over x [B, L, d], `mix` each one's causal first block; `memory` holds the source mask and
   * each layer's source keys and values (`cross_k_l`, `cross_v_l`).
   */
  protected decoderLayers(x: tf.Tensor3D, mix: Mixer, memory: NamedTensors, training: boolean): tf.Tensor3D {
    const srcBias = keyPaddingBias(memory.src_mask as tf.Tensor2D);
    this.w.decoder.forEach((layer, l) => {
      x = this.residual(x, layer.ln1, (h) => mix(h, l), training);
      const keys = memory[`cross_k_${l}`] as tf.Tensor4D;
      const values = memory[`cross_v_${l}`] as tf.Tensor4D;
      const attend = (h: tf.Tensor3D) => attendHeads(layer.cross, h, keys, values, srcBias, this.attnDropout(training));
      x = this.residual(x, layer.ln2, attend, training);
      x = this.residual(x, layer.ln3, this.feedForwardBlock(layer.ff, training), training);
    });
    return this.w.decoderNorm ? layerNorm(this.w.decoderNorm, x) : x;
  }

  /** Log-probabilities [N, |V|] of one decoding step's decoder output [N, 1, d]. */
  protected stepLogProbs(out: tf.Tensor3D): tf.Tensor2D {
    const logits = this.head.logits(tf.reshape(out, [out.shape[0], this.cfg.model]) as tf.Tensor2D, false);
    return tf.logSoftmax(logits, 1);
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
   * uncached decoder): what step-by-step decoding must reproduce.
   */
  forcedLogProbs(src: tf.Tensor2D, srcLen: tf.Tensor1D, tgtIn: tf.Tensor2D): tf.Tensor3D {
    return tf.tidy(() => {
      const [B, T] = tgtIn.shape;
      const out = this.forcedOutputs(src, srcLen, tgtIn, false);
      const logits = this.head.logits(tf.reshape(out, [B * T, this.cfg.model]) as tf.Tensor2D, false);
      return tf.reshape(tf.logSoftmax(logits, 1), [B, T, -1]) as tf.Tensor3D;
    });
  }
}
