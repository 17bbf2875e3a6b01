import type * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import type { OutputHead } from '../heads/types.ts';
import type { ParamStore } from '../params.ts';

/** A padded batch, row-major: src [B, S], tgtIn/tgtOut/tgtMask [B, T]; tgtIn = <s> y, tgtOut = y </s>. */
export interface Seq2SeqBatch {
  B: number;
  S: number;
  T: number;
  src: Int32Array;
  srcLen: Int32Array;
  tgtIn: Int32Array;
  tgtOut: Int32Array;
  tgtMask: Float32Array;
  /** Target tokens that count in the loss (</s> included). */
  tokens: number;
}

/** Decoder-side tensors by the names the ONNX graphs use; row = axis 0. */
export type NamedTensors = Record<string, tf.Tensor>;

export interface Seq2SeqModel {
  readonly arch: string;
  readonly params: ParamStore;
  readonly head: OutputHead;
  /** Names of the recurrent state tensors and of the per-row constant memory tensors. */
  readonly stateNames: string[];
  readonly memoryNames: string[];
  /** Sum of token negative log-likelihoods over the batch (divide by batch.tokens for the mean). */
  lossSum(batch: Seq2SeqBatch, training: boolean): tf.Scalar;
  /** Encoder: src ids [B, S] and lengths [B] to the decoder's initial state and memory. */
  encode(src: tf.Tensor2D, srcLen: tf.Tensor1D): NamedTensors;
  /** One decoder step: previous tokens [N] and state+memory to log-probabilities [N, |V|] and the next state. */
  step(prev: tf.Tensor1D, inputs: NamedTensors): { logProbs: tf.Tensor2D; state: NamedTensors };
  /**
   * The encoder and decoder-step graphs and how they connect. `opset` defaults to 18;
   * `storeFrozen` is passed to the head (see HeadOnnxContext.storeFrozen).
   */
  toOnnx(opts?: { opset?: number; storeFrozen?: boolean }): { encoder: GraphBuilder; decoder: GraphBuilder; graphs: ModelCard['graphs'] };
}

export interface ModelSizes {
  srcVocab: number;
  tgtVocab: number;
}

export interface ArchDefinition<Config extends object> {
  name: string;
  summary: string;
  /** Named presets; every field of Config must be set by each. */
  presets: Record<string, Config>;
  build(config: Config, sizes: ModelSizes, head: { name: string; options?: Record<string, unknown> }, seed: number): Seq2SeqModel;
}
