import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { convBlock, convBlockStep, encoderPadLeft, type ConvKind } from '../layers/lightconv-block.ts';
import { positionVectors, positionVectorsAt } from '../layers/positional-encoding.ts';
import { lightconvOnnx } from './lightconv-onnx.ts';
import { createLightConvWeights, lightconvCacheNames, type LightConvWeights } from './lightconv-weights.ts';
import { registerArch } from './registry.ts';
import { ResidualSeq2Seq, type Mixer } from './residual-seq2seq.ts';
import {
  expectInput,
  type ArchRecipe,
  type EncoderInput,
  type ModelSizes,
  type NamedTensors,
  type OnnxGraphOptions,
  type Seq2SeqModel,
} from './types.ts';

const rate = z.number().min(0).lt(1);
const kernels = z.array(z.number().int().positive()).min(1);

const settings = z
  .strictObject({
    encoderLayers: z.number().int().positive(),
    decoderLayers: z.number().int().positive(),
    /** d, the model size; the convolutions run over d channels too (fairseq's conv dim = embed dim). */
    model: z.number().int().positive(),
    /** Heads of the convolutions (each head's kernel shared by its d/heads channels) and of the cross-attention. */
    heads: z.number().int().positive(),
    /** Inner size of the feed-forward blocks. */
    ff: z.number().int().positive(),
    /** Kernel width K of each encoder layer (centred), one per layer. */
    encoderKernels: kernels,
    /** Kernel width K of each decoder layer (causal), one per layer. */
    decoderKernels: kernels,
    /** A GLU after the input projection (which then projects to 2d). */
    glu: z.boolean(),
    /** DropConnect on the normalised convolution weights. */
    weightDropout: rate,
    /** Dropout on embeddings+positions and on every residual branch. */
    dropout: rate,
    /** Dropout on the cross-attention weights. */
    attentionDropout: rate,
    /** Dropout on the feed-forward blocks' hidden activations. */
    activationDropout: rate,
    norm: z.enum(['post', 'pre']),
    /**
     * `sinusoidal` (frost's frequencies, from position 0), `sinusoidal-fairseq` (fairseq's
     * SinusoidalPositionalEmbedding: its frequencies, the first token at position 2; imported fairseq lightconv
     * models) or `learned`.
     */
    positions: z.enum(['sinusoidal', 'sinusoidal-fairseq', 'learned']),
    /** Rows of a learned position table (the longest source or output); sinusoidal positions have no limit. */
    maxPositions: z.number().int().positive(),
  })
  .superRefine((cfg, ctx) => {
    // In the schema, so that `--set encoderLayers=3` without the widths is refused with the preset as well.
    for (const [key, layers] of [
      ['encoderKernels', 'encoderLayers'],
      ['decoderKernels', 'decoderLayers'],
    ] as const) {
      if (cfg[key].length !== cfg[layers])
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `has ${cfg[key].length} widths for ${cfg[layers]} ${layers}`,
        });
    }
    if (cfg.model % cfg.heads !== 0)
      ctx.addIssue({ code: 'custom', path: ['heads'], message: `does not divide the model size ${cfg.model}` });
  });

/**
 * LightConv and DynamicConv, the encoder-decoders of Wu et al. (2019), "Pay Less Attention with Lightweight and
 * Dynamic Convolutions" (fairseq's lightconv.py): the Transformer with each self-attention replaced by a
 * convolution over time whose kernels are softmax-normalised and shared by the channels of a head.
 *   embed:   x = √d · E[token] + P[position]                             (dropout)
 *   encoder: N × [convolution block (centred), feed-forward], each a residual block
 *   decoder: N × [convolution block (causal), attention over the encoder output, feed-forward]
 *   convolution block: input projection (GLU), the convolution (models/layers/lightconv-block.ts), projection
 * lightconv's kernels are parameters, one [K] per head and layer; dynamicconv predicts them from each position's
 * input. Residual blocks, norms and heads are the Transformer's (residual-seq2seq.ts).
 *
 * Decoding is incremental, at a cost that does not grow with the output: a decoder layer's state is its
 * convolution's last K − 1 inputs (`conv_window_l` [rows, K − 1, d], zeros at the start: the causal padding), and
 * `position` [rows] says which position vector the next token gets. The cross-attention's keys and values are
 * per-row memory, as the Transformer's. See docs/lightconv.md.
 */
export type LightConvConfig = z.infer<typeof settings>;

const KERNELS_7 = [3, 7, 15, 31, 31, 31, 31];
const common = { positions: 'sinusoidal', maxPositions: 256, activationDropout: 0 } as const;
const presets: Record<string, LightConvConfig> = {
  // Pre-norm, no dropout: the tests' model; trains at a constant learning rate (as the Transformer's tiny).
  tiny: {
    ...common,
    norm: 'pre',
    encoderLayers: 2,
    decoderLayers: 2,
    model: 64,
    heads: 4,
    ff: 128,
    encoderKernels: [3, 5],
    decoderKernels: [3, 5],
    glu: true,
    weightDropout: 0,
    dropout: 0,
    attentionDropout: 0,
  },
  // Multi30k on a small machine, the size of the Transformer's small.
  small: {
    ...common,
    norm: 'post',
    encoderLayers: 3,
    decoderLayers: 3,
    model: 256,
    heads: 4,
    ff: 1024,
    encoderKernels: [3, 7, 15],
    decoderKernels: [3, 7, 15],
    glu: false,
    weightDropout: 0.1,
    dropout: 0.1,
    attentionDropout: 0.1,
  },
  // fairseq's lightconv_iwslt_de_en with the paper's IWSLT flags (--encoder-glu 0 --decoder-glu 0, dropouts).
  iwslt: {
    ...common,
    norm: 'post',
    encoderLayers: 7,
    decoderLayers: 6,
    model: 512,
    heads: 4,
    ff: 1024,
    encoderKernels: KERNELS_7,
    decoderKernels: KERNELS_7.slice(0, 6),
    glu: false,
    weightDropout: 0.1,
    dropout: 0.3,
    attentionDropout: 0.1,
  },
  // fairseq's lightconv_wmt_en_de_big. Porting note: fairseq's input_dropout (0.1 there, 0 for IWSLT: dropout on
  // the block's input before the projection) is not a setting here; the other rates are.
  wmt: {
    ...common,
    norm: 'post',
    encoderLayers: 7,
    decoderLayers: 6,
    model: 1024,
    heads: 16,
    ff: 4096,
    encoderKernels: KERNELS_7,
    decoderKernels: KERNELS_7.slice(0, 6),
    glu: true,
    weightDropout: 0.1,
    dropout: 0.3,
    attentionDropout: 0.1,
  },
};

export class LightConvModel extends ResidualSeq2Seq<LightConvConfig, LightConvWeights> implements Seq2SeqModel {
  declare readonly arch: LightConvArch;
  readonly stateNames: string[];
  readonly memoryNames: string[];

  constructor(
    arch: LightConvArch,
    cfg: LightConvConfig,
    sizes: ModelSizes & { srcVocab: number },
    headSpec: { name: string; options?: Record<string, unknown> },
    seed: number,
  ) {
    super(arch, cfg, sizes, headSpec, seed, (p) => createLightConvWeights(p, cfg, sizes, CONV_KINDS[arch]));
    ({ state: this.stateNames, memory: this.memoryNames } = lightconvCacheNames(cfg.decoderKernels));
  }

  /** DropConnect on the normalised convolution weights (fairseq's weight_dropout). */
  private dropConnect(training: boolean) {
    return (k: tf.Tensor) => this.dropout(k, this.cfg.weightDropout, training);
  }

  /** The encoder stack's output [B, S, d] and the padding mask [B, S]. */
  private encoderStack(ids: tf.Tensor2D, lengths: tf.Tensor1D, training: boolean) {
    const S = ids.shape[1];
    const mask = this.sourceMask(S, lengths);
    const x = this.embedSource(ids, training);
    const conv: Mixer = (h, l) => {
      const block = this.w.encoder[l].conv;
      return convBlock(block, h, encoderPadLeft(block.width), mask, this.dropConnect(training));
    };
    return { out: this.encoderLayers(x, conv, training), mask };
  }

  protected forcedOutputs(src: tf.Tensor2D, srcLen: tf.Tensor1D, tgtIn: tf.Tensor2D, training: boolean): tf.Tensor3D {
    const { out, mask } = this.encoderStack(src, srcLen, training);
    const memory = { ...this.crossKeysValues(out), src_mask: mask };
    const y = this.embedTarget(tgtIn, positionVectors(this.w.tgtPositions, 0, tgtIn.shape[1]), training);
    const conv: Mixer = (h, l) => {
      const block = this.w.decoder[l].conv;
      return convBlock(block, h, block.width - 1, null, this.dropConnect(training));
    };
    return this.decoderLayers(y, conv, memory, training);
  }

  encode(input: EncoderInput): NamedTensors {
    const { ids, lengths } = expectInput(this.arch, 'tokens', input);
    return tf.tidy(() => {
      const B = ids.shape[0];
      const { out, mask } = this.encoderStack(ids, lengths, false);
      const named: NamedTensors = { ...this.crossKeysValues(out), src_mask: mask };
      // Nothing decoded yet: position 0, and windows of zeros, the causal convolution's padding.
      named.position = tf.zeros([B], 'int32');
      this.w.decoder.forEach(({ conv }, l) => {
        if (conv.width > 1) named[`conv_window_${l}`] = tf.zeros([B, conv.width - 1, this.cfg.model]);
      });
      return named;
    });
  }

  step(prev: tf.Tensor1D, inputs: NamedTensors): { logProbs: tf.Tensor2D; state: NamedTensors } {
    return tf.tidy(() => {
      const N = prev.shape[0];
      const d = this.cfg.model;
      const position = inputs.position as tf.Tensor1D;
      const positions = tf.expandDims(positionVectorsAt(this.w.tgtPositions, position), 1);
      const x = this.embedTarget(tf.reshape(prev, [N, 1]), positions, false);
      const state: NamedTensors = { position: tf.add(position, tf.scalar(1, 'int32')) };
      const conv: Mixer = (h, l) => {
        const name = `conv_window_${l}`;
        const step = convBlockStep(
          this.w.decoder[l].conv,
          inputs[name] as tf.Tensor3D | undefined,
          tf.reshape(h, [N, d]),
        );
        if (step.window) state[name] = step.window;
        return tf.reshape(step.y, [N, 1, d]) as tf.Tensor3D;
      };
      const out = this.decoderLayers(x, conv, inputs, false);
      return { logProbs: this.stepLogProbs(out), state };
    });
  }

  toOnnx(opts: OnnxGraphOptions = {}) {
    return lightconvOnnx(this, opts);
  }
}

/** The two architectures: one model, its kernels parameters (lightweight) or predicted (dynamic). */
const CONV_KINDS = { lightconv: 'lightweight', dynamicconv: 'dynamic' } as const satisfies Record<string, ConvKind>;
export type LightConvArch = keyof typeof CONV_KINDS;

const SUMMARIES: Record<LightConvArch, string> = {
  lightconv: 'Wu et al.: lightweight convolutions (a softmaxed kernel per head) in place of self-attention',
  dynamicconv: 'Wu et al.: dynamic convolutions (a kernel predicted per position) in place of self-attention',
};

// fairseq's recipe for both (examples/pay_less_attention_paper), the Transformer's: label smoothing 0.1, Adam β₂
// 0.98, 4000 warm-up updates to 5e-4 then inverse square root, ≤ 4096-token batches, no clipping.
const recipe: ArchRecipe = {
  labelSmoothing: 0.1,
  learningRate: 5e-4,
  adamBetas: [0.9, 0.98],
  clipNorm: 0,
  lrSchedule: 'inverse-sqrt',
  warmupSteps: 4000,
  maxTokens: 4096,
};

for (const arch of Object.keys(CONV_KINDS) as LightConvArch[]) {
  registerArch<LightConvConfig>({
    name: arch,
    summary: SUMMARIES[arch],
    recipe,
    jointVocabulary: true,
    tasks: ['translation'],
    inputKind: 'tokens',
    presets,
    settings,
    build: (config, sizes, head, seed) => {
      if (sizes.srcVocab === undefined) throw new TypeError(`${arch} needs a source vocabulary size (sizes.srcVocab)`);
      return new LightConvModel(arch, config, { ...sizes, srcVocab: sizes.srcVocab }, head, seed);
    },
  });
}
