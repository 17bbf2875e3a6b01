import * as tf from '@tensorflow/tfjs-core';
import type { StepModel } from '../core/decode/types.ts';
import type { NamedTensors, Seq2SeqModel } from '../models/index.ts';

/** Decoder tensors of the live rows: recurrent state and per-row memory. */
export interface TfjsDecoderState {
  state: NamedTensors;
  memory: NamedTensors;
}

/**
 * Runs core/decode's search on a tfjs model (validation BLEU during training, export parity).
 * Ownership: step and reorder dispose the tensors of the state they are given, so search must not
 * reuse a state after passing it on (it doesn't).
 */
export class TfjsStepModel implements StepModel<TfjsDecoderState> {
  readonly vocabSize: number;

  constructor(
    private readonly model: Seq2SeqModel,
    vocabSize: number,
    readonly bos: number,
    readonly eos: number,
    readonly pad = 0,
  ) {
    this.vocabSize = vocabSize;
  }

  /** Encodes a batch of id sequences (without specials) into the decoder's initial state. */
  encode(sources: ArrayLike<number>[]): TfjsDecoderState {
    const B = sources.length;
    const S = Math.max(1, ...sources.map((s) => s.length));
    const ids = new Int32Array(B * S).fill(this.pad);
    const lengths = new Int32Array(B);
    sources.forEach((s, b) => {
      for (let j = 0; j < s.length; j++) ids[b * S + j] = s[j];
      lengths[b] = Math.max(1, s.length);
    });
    return this.split(
      tf.tidy(() =>
        this.model.encode({
          kind: 'tokens',
          ids: tf.tensor2d(ids, [B, S], 'int32'),
          lengths: tf.tensor1d(lengths, 'int32'),
        }),
      ),
    );
  }

  /** Encodes `count` images, row-major [count, ...model.imageShape], into the decoder's initial state. */
  encodeImages(images: Float32Array, count: number): TfjsDecoderState {
    const shape = this.model.imageShape;
    if (shape === undefined) throw new TypeError(`${this.model.arch} does not read images`);
    return this.split(
      tf.tidy(() => this.model.encode({ kind: 'image', images: tf.tensor(images, [count, ...shape], 'float32') })),
    );
  }

  private split(out: NamedTensors): TfjsDecoderState {
    const state: NamedTensors = {};
    const memory: NamedTensors = {};
    for (const name of this.model.stateNames) state[name] = out[name];
    for (const name of this.model.memoryNames) memory[name] = out[name];
    return { state, memory };
  }

  async step(prev: Int32Array, s: TfjsDecoderState): Promise<{ logProbs: Float32Array; state: TfjsDecoderState }> {
    const { logProbs, state } = tf.tidy(() => this.model.step(tf.tensor1d(prev, 'int32'), { ...s.state, ...s.memory }));
    const values = (await logProbs.data()) as Float32Array;
    logProbs.dispose();
    tf.dispose(Object.values(s.state));
    return { logProbs: values, state: { state, memory: s.memory } };
  }

  reorder(s: TfjsDecoderState, order: Int32Array): TfjsDecoderState {
    const gather = (named: NamedTensors): NamedTensors => {
      const out: NamedTensors = {};
      const index = tf.tensor1d(order, 'int32');
      for (const [name, t] of Object.entries(named)) out[name] = tf.gather(t, index);
      index.dispose();
      tf.dispose(Object.values(named));
      return out;
    };
    return { state: gather(s.state), memory: gather(s.memory) };
  }

  dispose(s: TfjsDecoderState): void {
    tf.dispose([...Object.values(s.state), ...Object.values(s.memory)]);
  }
}
