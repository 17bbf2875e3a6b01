import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { OutputHead } from '../heads/types.ts';
import type { TokenLossOptions } from '../loss.ts';
import { createImageEncoder, type ImageEncoder } from '../layers/image-encoder.ts';
import {
  createLstm,
  lstmInputProjection,
  lstmOnnxStep,
  lstmStep,
  lstmStepWith,
  type LstmState,
  type LstmWeights,
} from '../layers/lstm.ts';
import { sharedWeightMatMul } from '../layers/shared-matmul.ts';
import { tensorValue } from '../onnx-values.ts';
import { ParamStore } from '../params.ts';
import { CaptionDecoding, captionLstmSettings, packCaptions, type CaptionLstmConfig } from './caption-decoding.ts';
import { registerArch } from './registry.ts';
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
import { encoderDecoderOnnx } from './graph-spec.ts';

/**
 * Show and Tell (Vinyals et al., 2015): the image is the LSTM's first input, words follow.
 *   x₋₁ = CNN(I) W_I + b_I           (the pooled image feature in the word-embedding space)
 *   (h₋₁, c₋₁) = LSTM(x₋₁, 0)        (the encoder graph ends here: this is the decoder's initial state)
 *   step t: (h_t, c_t) = LSTM(E y_{t-1}, (h_{t-1}, c_{t-1}))
 *           f_t = h_t                → the output head scores f_t (d = hidden)
 * The image is seen once, at t = −1, as in the paper (feeding it at every step overfit there).
 *
 * Its settings are the common caption LSTM's: the image is embedded to e as the words are, the LSTM
 * size H is also d (the head scores h), and dropout is on the image and word embeddings and on f.
 */
export type ShowTellConfig = CaptionLstmConfig;

const settings = z.strictObject(captionLstmSettings);

const presets: Record<string, ShowTellConfig> = {
  tiny: { cnnChannels: [8, 16, 32], embedding: 64, hidden: 128, dropout: 0 },
  small: { cnnChannels: [32, 64, 128, 256], embedding: 256, hidden: 512, dropout: 0.3 },
  paper: { cnnChannels: [64, 128, 256, 512], embedding: 512, hidden: 512, dropout: 0.5 },
};

class ShowTellModel implements Seq2SeqModel {
  readonly arch = 'show-tell';
  readonly inputKind = 'image';
  readonly imageShape: readonly number[];
  readonly params: ParamStore;
  readonly head: OutputHead;
  readonly stateNames = ['h', 'c'];
  readonly memoryNames: string[] = [];
  private readonly encoder: ImageEncoder;
  private readonly decoding: CaptionDecoding;
  private readonly imageW: tf.Variable;
  private readonly imageB: tf.Variable;
  private readonly lstm: LstmWeights;

  constructor(
    private readonly cfg: ShowTellConfig,
    sizes: ModelSizes,
    headSpec: { name: string; options?: Record<string, unknown> },
    seed: number,
  ) {
    const p = new ParamStore(seed);
    this.params = p;
    const { embedding: e, hidden: H } = cfg;
    this.encoder = createImageEncoder(p, sizes.image, cfg);
    this.imageShape = this.encoder.inputShape;
    this.imageW = p.variable('encoder/image-embedding/W', [this.encoder.channels, e], { kind: 'glorot-uniform' });
    this.imageB = p.variable('encoder/image-embedding/b', [e], { kind: 'zeros' });
    this.lstm = createLstm(p, 'decoder/lstm', e, H);
    this.decoding = new CaptionDecoding(
      p,
      seed,
      { vocab: sizes.tgtVocab, embedding: e, output: H },
      headSpec,
      cfg.dropout,
    );
    this.head = this.decoding.head;
  }

  /** (h₋₁, c₋₁): the LSTM's state after reading the image embedding from a zero state. */
  private initialState(pooled: tf.Tensor2D, training: boolean): LstmState {
    const x = this.decoding.dropout(tf.add(tf.matMul(pooled, this.imageW), this.imageB) as tf.Tensor2D, training);
    const zeros = tf.zeros([pooled.shape[0], this.cfg.hidden]) as tf.Tensor2D;
    return lstmStep(this.lstm, lstmInputProjection(this.lstm, x), { h: zeros, c: zeros });
  }

  lossSum(modelBatch: ModelBatch, training: boolean, loss?: TokenLossOptions): tf.Scalar {
    const batch = expectBatch(this.arch, 'image', modelBatch);
    return tf.tidy(() => {
      // Longest caption first, so step t runs only the captions not yet finished.
      const packed = packCaptions(batch);
      let state = this.initialState(
        this.decoding.imageFeatures(this.encoder, batch, packed, training).pooled,
        training,
      );
      // Every step's input projection in one MatMul; Wh's gradient once over all steps (shared-matmul.ts).
      const gx = tf.split(
        lstmInputProjection(this.lstm, this.decoding.embedInputs(packed, training)),
        packed.steps.counts,
        0,
      ) as tf.Tensor2D[];
      const hWh = sharedWeightMatMul(this.lstm.Wh);
      const outputs: tf.Tensor2D[] = [];
      for (const [t, n] of packed.steps.counts.entries()) {
        if (state.h.shape[0] > n) state = { h: tf.slice(state.h, 0, n), c: tf.slice(state.c, 0, n) };
        state = lstmStepWith(this.lstm, gx[t], state, hWh);
        outputs.push(state.h);
      }
      return this.decoding.nllSum(tf.concat(outputs, 0), packed, training, loss);
    });
  }

  encode(input: EncoderInput): NamedTensors {
    const { images } = expectInput(this.arch, 'image', input);
    return tf.tidy(() => {
      const { h, c } = this.initialState(this.encoder.encode(images, false).pooled, false);
      return { h, c };
    });
  }

  step(prev: tf.Tensor1D, inputs: NamedTensors): { logProbs: tf.Tensor2D; state: NamedTensors } {
    return tf.tidy(() => {
      const e = tf.gather(this.decoding.embedding, prev) as tf.Tensor2D;
      const { h, c } = lstmStep(this.lstm, lstmInputProjection(this.lstm, e), {
        h: inputs.h as tf.Tensor2D,
        c: inputs.c as tf.Tensor2D,
      });
      return { logProbs: this.decoding.logProbs(h), state: { h, c } };
    });
  }

  toOnnx(opts: OnnxGraphOptions = {}) {
    return encoderDecoderOnnx(this, [this.encoder.onnxInput.name], opts, {
      encoder: (opset) => this.encoderGraph(opset),
      decoder: (opset, storeFrozen) => this.decoderGraph(opset, storeFrozen),
    });
  }

  private encoderGraph(opset: number): GraphBuilder {
    const g = new GraphBuilder('frost-show-tell-encoder', { opset });
    const H = this.cfg.hidden;
    const { name, dims } = this.encoder.onnxInput;
    const { pooled } = g.scope('encoder', () => this.encoder.toOnnx(g, g.input(name, 'float32', dims)));
    // x₋₁ = pooled W_I + b_I; (h, c) = LSTM(x₋₁, 0)
    const x = g.op('Gemm', [
      pooled,
      g.initializer('encoder/image-embedding/W', tensorValue(this.imageW)),
      g.initializer('encoder/image-embedding/b', tensorValue(this.imageB)),
    ]);
    const { h, c } = lstmOnnxStep(g, this.lstm, 'decoder/lstm', x);
    g.output(h, 'h', 'float32', ['batch', H]);
    g.output(c, 'c', 'float32', ['batch', H]);
    return g;
  }

  private decoderGraph(opset: number, storeFrozen: boolean): GraphBuilder {
    const g = new GraphBuilder('frost-show-tell-decoder-step', { opset });
    const H = this.cfg.hidden;
    const prev = g.input('prev_token', 'int64', ['rows']);
    const h = g.input('h', 'float32', ['rows', H]);
    const c = g.input('c', 'float32', ['rows', H]);
    // e = E[y_{t-1}]; (h', c') = LSTM(e, (h, c)); log_probs = log_softmax(head(h'))
    const { e, embedding } = this.decoding.embedOnnx(g, prev);
    const next = lstmOnnxStep(g, this.lstm, 'decoder/lstm', e, { h, c });
    this.decoding.logProbsOnnx(g, next.h, embedding, storeFrozen);
    g.output(next.h, 'next_h', 'float32', ['rows', H]);
    g.output(next.c, 'next_c', 'float32', ['rows', H]);
    return g;
  }
}

registerArch<ShowTellConfig>({
  name: 'show-tell',
  summary: "Show and Tell (Vinyals et al.): CNN image feature as the LSTM's first input",
  tasks: ['caption'],
  inputKind: 'image',
  presets,
  settings,
  build: (config, sizes, head, seed) => new ShowTellModel(config, sizes, head, seed),
});
