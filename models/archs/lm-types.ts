import type * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { OutputHead } from '../heads/types.ts';
import type { ParamStore } from '../params.ts';

/**
 * A language model's contract. It is not a Seq2SeqModel: there is no encoder and no per-sentence
 * batch. Training reads a continuous token stream in windows of `T` steps (truncated BPTT), and the
 * recurrent state at the end of one window is the start of the next, so the model takes and returns
 * its state explicitly. See docs/language-modelling.md for why this is its own interface.
 */

/** One truncated-BPTT window of B parallel streams, row-major [B, T]: targets[b, t] = inputs[b, t + 1]. */
export interface StreamWindow {
  B: number;
  T: number;
  inputs: Int32Array;
  targets: Int32Array;
}

/** The recurrent state by the names the ONNX step graph uses (h0, c0, h1, c1 …), each [B, H]. */
export type LmState = Record<string, tf.Tensor2D>;

export interface LanguageModel {
  readonly arch: string;
  readonly params: ParamStore;
  readonly head: OutputHead;
  /** The state tensors' names, in graph order. */
  readonly stateNames: readonly string[];
  /** Sizes of each state tensor's second axis. */
  readonly stateSize: number;
  /** A zero state for `rows` streams. */
  initialState(rows: number): LmState;
  /**
   * Σ token NLL over the window (divide by B·T for the mean) and the state after its last step.
   * Gradients stop at `state`: it is a plain tensor carried from the previous window.
   */
  windowLoss(window: StreamWindow, state: LmState, training: boolean): { lossSum: tf.Scalar; state: LmState };
  /** The log-probability of each target of a window, [B, T] row-major (evaluation by frequency bin). */
  targetLogProbs(window: StreamWindow, state: LmState): { logProbs: Float32Array; state: LmState };
  /** One step: tokens [N] and state → log-probabilities [N, |V|] of the next token and the next state. */
  step(tokens: tf.Tensor1D, state: LmState): { logProbs: tf.Tensor2D; state: LmState };
  /** The step graph: `token` int64 [rows] and the state in; `log_probs` and `next_<state>` out. */
  toOnnx(opts?: { opset?: number; storeFrozen?: boolean }): GraphBuilder;
}
