import type * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import type { OutputHead } from '../heads/types.ts';
import type { ParamStore } from '../params.ts';
import type { OptionsSchema } from '../../core/options.ts';
import type { TokenLossOptions } from '../loss.ts';
import type { LanguageModel } from './lm-types.ts';

/** What an encoder reads: token ids (translation) or images (captioning). */
export type InputKind = 'tokens' | 'image';

/** The target side of a training batch, row-major [B, T]; tgtIn = <s> y, tgtOut = y </s>. */
export interface TargetBatch {
  B: number;
  T: number;
  tgtIn: Int32Array;
  tgtOut: Int32Array;
  tgtMask: Float32Array;
  /** Target tokens that count in the loss (</s> included). */
  tokens: number;
}

/** A padded batch of token sources: src [B, S]. */
export interface Seq2SeqBatch extends TargetBatch {
  S: number;
  src: Int32Array;
  srcLen: Int32Array;
}

/**
 * A batch of images with one caption each: `images` holds B inputs of `imageShape` row-major
 * ([B, 3, H, W] normalised pixels, or [B, ...] features of a frozen encoder). Captions of the same
 * image may share an input row: `imageRows[b]` is the row of `images` that caption b describes,
 * so a CNN runs once per image however many of its captions are in the batch.
 */
export interface ImageBatch extends TargetBatch {
  images: Float32Array;
  imageShape: number[];
  /** Number of image rows in `images`. */
  imageCount: number;
  imageRows: Int32Array;
}

export type ModelBatch = Seq2SeqBatch | ImageBatch;

/** The encoder's input for {@link Seq2SeqModel.encode}, by kind. */
export type EncoderInput =
  | { kind: 'tokens'; ids: tf.Tensor2D; lengths: tf.Tensor1D }
  /** images [B, ...imageShape] */
  | { kind: 'image'; images: tf.Tensor };

/** Decoder-side tensors by the names the ONNX graphs use; row = axis 0. */
export type NamedTensors = Record<string, tf.Tensor>;

export interface Seq2SeqModel {
  readonly arch: string;
  readonly inputKind: InputKind;
  /** Image models: the shape of one encoder input ([3, H, W] pixels, or a frozen encoder's features). */
  readonly imageShape?: readonly number[];
  readonly params: ParamStore;
  readonly head: OutputHead;
  /** Names of the recurrent state tensors and of the per-row constant memory tensors. */
  readonly stateNames: string[];
  readonly memoryNames: string[];
  /**
   * Sum of token negative log-likelihoods over the batch (divide by batch.tokens for the mean),
   * plus any regulariser the architecture defines on the same scale (show-attend-tell's attention
   * penalty). The batch must be of the model's input kind. `loss` (label smoothing, the NLL sink) is
   * the training recipe's: hand it to maskedCrossEntropySum (models/loss.ts) unchanged; an
   * architecture that ignored it would train without the smoothing it was asked for
   * (test/label-smoothing.test.ts checks every registered architecture).
   */
  lossSum(batch: ModelBatch, training: boolean, loss?: TokenLossOptions): tf.Scalar;
  /** Encoder: a batch of inputs of the model's kind to the decoder's initial state and memory. */
  encode(input: EncoderInput): NamedTensors;
  /** One decoder step: previous tokens [N] and state+memory to log-probabilities [N, |V|] and the next state. */
  step(prev: tf.Tensor1D, inputs: NamedTensors): { logProbs: tf.Tensor2D; state: NamedTensors };
  /**
   * The encoder and decoder-step graphs and how they connect. `opset` defaults to 18 (DEFAULT_OPSET
   * in graph-spec.ts; it applies to both graphs; `encoderOpset` overrides it for the encoder, which
   * is merged into a foreign graph of that opset when the model reads a frozen encoder's features);
   * `storeFrozen` is passed to the head (see HeadOnnxContext.storeFrozen).
   */
  toOnnx(opts?: OnnxGraphOptions): {
    encoder: GraphBuilder;
    decoder: GraphBuilder;
    graphs: ModelCard['graphs'];
  };
}

/** What `Seq2SeqModel.toOnnx` is asked for (see there). */
export interface OnnxGraphOptions {
  opset?: number;
  encoderOpset?: number;
  storeFrozen?: boolean;
  /**
   * How a step graph carries key/value caches, for architectures that have them (the Transformer): `concat`
   * (default) returns whole caches as next_<state>, `append` only the new position (the card's
   * `graphs.decoder.cache`).
   */
  decoderCache?: 'concat' | 'append';
  /**
   * The step graph reads its encoder memory with one row per source, and its rows as equal groups of consecutive
   * rows per source (the card's `graphs.decoder.groupedMemory`), for architectures whose memory is attended over
   * (Transformer, LightConv, DynamicConv). Off by default: a consumer that feeds one memory row per step row
   * (Triton, the Hugging Face layout) needs the plain form.
   */
  groupedMemory?: boolean;
}

/**
 * What an image model reads: normalised pixels [3, size, size] that its own CNN encodes, or the
 * output of a frozen pretrained encoder ([C] pooled, or [C, h, w] a spatial grid), computed
 * outside the model (by onnxruntime) and merged in front of its encoder graph at export.
 */
export type ImageInputSpec = { kind: 'pixels'; size: number } | { kind: 'features'; shape: number[] };

export interface ModelSizes {
  /** Source vocabulary (token-input models). */
  srcVocab?: number;
  tgtVocab: number;
  /**
   * Source and target share one vocabulary (a joint subword model): the model keeps one embedding matrix for
   * both sides, which tied and shared heads also score with. Needs srcVocab === tgtVocab. @default false
   */
  jointEmbedding?: boolean;
  /**
   * Target ids the model never predicts (a joint subword vocabulary's source-only pieces, unused byte pieces):
   * the output layer pins their logits far below the rest (models/heads/output-mask.ts). @default none
   */
  excludedTargets?: readonly number[];
  /**
   * With `excludedTargets`: the output layer scores only the kept targets (models/heads/compact-output.ts) instead
   * of scoring all and pinning the excluded; its parameters then have K rows, not |V|. @default false
   */
  compactOutput?: boolean;
  /** Image-input models. */
  image?: ImageInputSpec;
}

/**
 * The training recipe an architecture trains best with, as defaults for a new run: `frost train`
 * uses these where the user gave no flag (an explicit flag always wins), so `--arch transformer`
 * gets its label smoothing, Adam betas and warm-up without typing them. Every field is optional;
 * what is left out takes the task's default (the paper's recipe for the RNNs).
 */
export interface ArchRecipe {
  /** ε of label smoothing (`--label-smoothing`). */
  labelSmoothing?: number;
  /** Peak (inverse-sqrt) or initial (plateau) Adam learning rate (`--lr`). */
  learningRate?: number;
  /** Adam β₁, β₂ (`--adam-betas`). */
  adamBetas?: [number, number];
  /** Adam ε (`--adam-eps`). */
  adamEpsilon?: number;
  /** Gradient-norm clipping; 0 turns it off (`--clip-norm`). */
  clipNorm?: number;
  /** Learning-rate schedule by name, train/schedules/ (`--lr-schedule`). */
  lrSchedule?: string;
  /** Warm-up updates of a warm-up schedule (`--warmup-steps`). */
  warmupSteps?: number;
  /** Learning rate at the first update of a warm-up schedule (`--warmup-init-lr`). */
  warmupInitLr?: number;
  /** Token-based batches (`--max-tokens`): at most this many padded tokens per batch. */
  maxTokens?: number;
}

/** The training tasks an architecture can serve (train/tasks/ registers one of each). */
export type ArchTask = 'translation' | 'caption' | 'lm';

/** What every architecture declares, whatever kind of model it builds. */
export interface ArchBase<Config extends object> {
  name: string;
  summary: string;
  /** The tasks it serves: `frost train --task` lists and accepts it for these only. */
  tasks: readonly ArchTask[];
  /** Named presets; every field of Config must be set by each. */
  presets: Record<string, Config>;
  /** Types of Config's fields (`--set key=value` is checked against it); unknown keys are refused. */
  settings: OptionsSchema<Config>;
}

/** An encoder-decoder architecture (translation, captioning): it builds a {@link Seq2SeqModel}. */
export interface ArchDefinition<Config extends object> extends ArchBase<Config> {
  /** Training-recipe defaults for new runs of this architecture (explicit flags win); absent: the task's. */
  recipe?: ArchRecipe;
  /**
   * Whether its recipe trains on one joint vocabulary, the source and target embedding shared (the Transformer's,
   * seed 003's; not the RNN's or ConvS2S's papers): bench:train and train-profile then do unless told (--joint).
   * Not in `recipe`, because `frost train` takes the vocabulary from its own flags. @default false
   */
  jointVocabulary?: boolean;
  /**
   * Whether its decoder step's state is each layer's self-attention keys and values (`self_k_<layer>`,
   * `self_v_<layer>`), growing one position a step (the Transformer's; rnn-attn and the caption LSTMs carry
   * recurrent state, ConvS2S and LightConv windows of past inputs). That is the state transformers.js and Optimum
   * feed an encoder-decoder's decoder, so only such an architecture takes the Hugging Face layout (export/hf/).
   * @default false
   */
  selfAttentionCaches?: boolean;
  /** What the architecture's encoder reads. */
  inputKind: InputKind;
  build(
    config: Config,
    sizes: ModelSizes,
    head: { name: string; options?: Record<string, unknown> },
    seed: number,
  ): Seq2SeqModel;
}

/**
 * A language-model architecture: no encoder and no sentence batches, a continuous stream read in
 * windows with the state carried (lm-types.ts), so it builds a {@link LanguageModel} from one vocabulary size.
 */
export interface LmArchDefinition<Config extends object> extends ArchBase<Config> {
  build(
    config: Config,
    vocabSize: number,
    head: { name: string; options?: Record<string, unknown> },
    seed: number,
  ): LanguageModel;
}

/** Narrows a batch to the kind a model reads, with an error naming the model otherwise. */
export function expectBatch<K extends InputKind>(
  arch: string,
  kind: K,
  batch: ModelBatch,
): K extends 'image' ? ImageBatch : Seq2SeqBatch {
  const isImage = 'images' in batch;
  if (isImage !== (kind === 'image')) {
    throw new TypeError(
      `${arch} reads ${kind === 'image' ? 'images' : 'token ids'}, but was given a batch of ${isImage ? 'images' : 'token ids'}`,
    );
  }
  return batch as K extends 'image' ? ImageBatch : Seq2SeqBatch;
}

/** Narrows an encoder input to the model's kind, with an error naming the model otherwise. */
export function expectInput<K extends InputKind>(
  arch: string,
  kind: K,
  input: EncoderInput,
): Extract<EncoderInput, { kind: K }> {
  if (input.kind !== kind)
    throw new TypeError(
      `${arch} encodes ${kind === 'image' ? 'images' : 'token ids'}, not ${input.kind === 'image' ? 'images' : 'token ids'}`,
    );
  return input as Extract<EncoderInput, { kind: K }>;
}
