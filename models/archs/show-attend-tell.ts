import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { OutputHead } from '../heads/types.ts';
import type { TokenLossOptions } from '../loss.ts';
import { attentionKeys, createAttention, type AttentionWeights } from '../layers/attention.ts';
import { attendGrid } from '../layers/grid-attention.ts';
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
import { CaptionDecoding, captionLstmSettings, packCaptions } from './caption-decoding.ts';
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

const settings = z.strictObject({
  ...captionLstmSettings,
  /** Attention MLP size. */
  attention: z.number().int().positive(),
  /** Size d of f, the vector the output head scores. */
  output: z.number().int().positive(),
  /** λ of the doubly stochastic attention penalty (the paper's 1). */
  attentionPenalty: z.number().nonnegative(),
});

/**
 * Show, Attend and Tell (Xu et al., 2015), soft attention, over the CNN's grid a_1..a_L (L = h·w):
 *   h₀ = tanh(mean_i(a_i) W_h + b_h)     c₀ = tanh(mean_i(a_i) W_c + b_c)
 *   step t: α_t = softmax_i(v · tanh(a_i U_a + h_{t-1} W_a + b_a))
 *           β_t = σ(h_{t-1} W_β + b_β)                       (the gating scalar, §4.2.1)
 *           ẑ_t = β_t Σ_i α_ti a_i
 *           (h_t, c_t) = LSTM([E y_{t-1}; ẑ_t], (h_{t-1}, c_{t-1}))
 *           f_t = tanh([h_t; ẑ_t; E y_{t-1}] W_o + b_o)      (the deep output layer, eq. 7)
 *                                                               → the output head scores f_t
 * Loss: Σ token NLL + λ Σ_b Σ_i (1 − Σ_t α_bti)², the doubly stochastic attention penalty (eq. 14),
 * summed over each caption's own steps (</s> included, padding not).
 * Dropout (a common caption LSTM setting) is on the word embeddings and on f.
 */
export type ShowAttendTellConfig = z.infer<typeof settings>;

const presets: Record<string, ShowAttendTellConfig> = {
  tiny: {
    cnnChannels: [8, 16, 32],
    embedding: 32,
    hidden: 64,
    attention: 32,
    output: 48,
    dropout: 0,
    attentionPenalty: 1,
  },
  small: {
    cnnChannels: [32, 64, 128, 256],
    embedding: 256,
    hidden: 512,
    attention: 256,
    output: 256,
    dropout: 0.3,
    attentionPenalty: 1,
  },
  paper: {
    cnnChannels: [64, 128, 256, 512],
    embedding: 512,
    hidden: 1024,
    attention: 512,
    output: 512,
    dropout: 0.5,
    attentionPenalty: 1,
  },
};

interface Weights {
  initH: { W: tf.Variable; b: tf.Variable };
  initC: { W: tf.Variable; b: tf.Variable };
  attention: AttentionWeights;
  betaW: tf.Variable;
  betaB: tf.Variable;
  lstm: LstmWeights;
  outW: tf.Variable;
  outB: tf.Variable;
}

class ShowAttendTellModel implements Seq2SeqModel {
  readonly arch = 'show-attend-tell';
  readonly inputKind = 'image';
  readonly imageShape: readonly number[];
  readonly params: ParamStore;
  readonly head: OutputHead;
  readonly stateNames = ['h', 'c'];
  readonly memoryNames = ['annotations', 'keys'];
  private readonly encoder: ImageEncoder;
  private readonly decoding: CaptionDecoding;
  private readonly w: Weights;

  constructor(
    private readonly cfg: ShowAttendTellConfig,
    sizes: ModelSizes,
    headSpec: { name: string; options?: Record<string, unknown> },
    seed: number,
  ) {
    const p = new ParamStore(seed);
    this.params = p;
    const { embedding: e, hidden: H, attention: att, output: d } = cfg;
    this.encoder = createImageEncoder(p, sizes.image, cfg);
    this.imageShape = this.encoder.inputShape;
    const D = this.encoder.channels;
    const dense = (name: string, rows: number, cols: number) => ({
      W: p.variable(`${name}/W`, [rows, cols], { kind: 'glorot-uniform' }),
      b: p.variable(`${name}/b`, [cols], { kind: 'zeros' }),
    });
    this.w = {
      initH: dense('decoder/init-h', D, H),
      initC: dense('decoder/init-c', D, H),
      attention: createAttention(p, 'decoder/attention', D, H, att),
      betaW: p.variable('decoder/beta/W', [H, 1], { kind: 'glorot-uniform' }),
      betaB: p.variable('decoder/beta/b', [1], { kind: 'zeros' }),
      lstm: createLstm(p, 'decoder/lstm', e + D, H),
      outW: p.variable('decoder/out/W', [H + D + e, d], { kind: 'glorot-uniform' }),
      outB: p.variable('decoder/out/b', [d], { kind: 'zeros' }),
    };
    this.decoding = new CaptionDecoding(
      p,
      seed,
      { vocab: sizes.tgtVocab, embedding: e, output: d },
      headSpec,
      cfg.dropout,
    );
    this.head = this.decoding.head;
  }

  /** h₀, c₀ from the mean annotation, and the attention keys a_i U_a (computed once per image). */
  private memory(grid: tf.Tensor3D, pooled: tf.Tensor2D): LstmState & { keys: tf.Tensor3D } {
    const { initH, initC, attention } = this.w;
    return {
      h: tf.tanh(tf.add(tf.matMul(pooled, initH.W), initH.b)) as tf.Tensor2D,
      c: tf.tanh(tf.add(tf.matMul(pooled, initC.W), initC.b)) as tf.Tensor2D,
      keys: attentionKeys(attention, grid),
    };
  }

  /** f = tanh([h; ẑ; e] W_o + b_o). */
  private outputFeatures(h: tf.Tensor2D, z: tf.Tensor2D, e: tf.Tensor2D): tf.Tensor2D {
    return tf.tanh(tf.add(tf.matMul(tf.concat([h, z, e], 1), this.w.outW), this.w.outB)) as tf.Tensor2D;
  }

  lossSum(modelBatch: ModelBatch, training: boolean, loss?: TokenLossOptions): tf.Scalar {
    const batch = expectBatch(this.arch, 'image', modelBatch);
    return tf.tidy(() => {
      const { embedding: e, hidden: H } = this.cfg;
      const { lstm, attention, betaW, betaB } = this.w;
      // Longest caption first, so step t runs only the captions not yet finished.
      const packed = packCaptions(batch);
      const { grid, pooled } = this.decoding.imageFeatures(this.encoder, batch, packed, training);
      const mem = this.memory(grid, pooled);
      const embT = this.decoding.embedInputs(packed, training);
      // The word's share of the LSTM input projection for all steps at once; ẑ's share needs ẑ_t.
      const WxE = tf.slice(lstm.Wx, [0, 0], [e, 4 * H]);
      const WxZ = tf.slice(lstm.Wx, [e, 0], [-1, 4 * H]);
      const gxE = tf.split(tf.add(tf.matMul(embT, WxE), lstm.bx), packed.steps.counts, 0) as tf.Tensor2D[];
      // Weights every step multiplies by get their gradient once, over all steps (shared-matmul.ts).
      const hWa = sharedWeightMatMul(attention.Wa);
      const hWbeta = sharedWeightMatMul(betaW);
      const zWx = sharedWeightMatMul(WxZ);
      const hWh = sharedWeightMatMul(lstm.Wh);
      let state: LstmState = { h: mem.h, c: mem.c };
      // The running captions' rows of the grid and its keys, cut again only when the count drops.
      let rows = { grid, keys: mem.keys };
      const hs: tf.Tensor2D[] = [];
      const zs: tf.Tensor2D[] = [];
      const alphas: tf.Tensor2D[] = [];
      for (const [t, n] of packed.steps.counts.entries()) {
        if (state.h.shape[0] > n) {
          state = { h: tf.slice(state.h, 0, n), c: tf.slice(state.c, 0, n) };
          rows = { grid: tf.slice(grid, 0, n), keys: tf.slice(mem.keys, 0, n) };
        }
        const { context, alpha } = attendGrid(attention, state.h, rows.grid, rows.keys, hWa);
        const z = tf.mul(tf.sigmoid(tf.add(hWbeta(state.h), betaB)), context) as tf.Tensor2D;
        state = lstmStepWith(lstm, tf.add(gxE[t], zWx(z)), state, hWh);
        hs.push(state.h);
        zs.push(z);
        alphas.push(alpha);
      }
      const f = this.outputFeatures(tf.concat(hs, 0), tf.concat(zs, 0), embT);
      const nll = this.decoding.nllSum(f, packed, training, loss);
      if (this.cfg.attentionPenalty === 0) return nll;
      // Σ_t m_bt α_bti over each caption's real steps: the packed α rows, weighted, summed per caption.
      const weighted = tf.mul(tf.concat(alphas, 0), tf.tensor2d(packed.mask, [packed.mask.length, 1]));
      const captionOf = tf.tensor1d(
        packed.steps.counts.flatMap((n) => Array.from({ length: n }, (_, i) => i)),
        'int32',
      );
      const coverage = tf.unsortedSegmentSum(weighted, captionOf, batch.B);
      const penalty = tf.sum(tf.square(tf.sub(1, coverage)));
      return tf.add(nll, tf.mul(penalty, this.cfg.attentionPenalty)) as tf.Scalar;
    });
  }

  encode(input: EncoderInput): NamedTensors {
    const { images } = expectInput(this.arch, 'image', input);
    return tf.tidy(() => {
      const { grid, pooled } = this.encoder.encode(images, false);
      const { h, c, keys } = this.memory(grid, pooled);
      return { h, c, annotations: grid, keys };
    });
  }

  step(prev: tf.Tensor1D, inputs: NamedTensors): { logProbs: tf.Tensor2D; state: NamedTensors } {
    return tf.tidy(() => {
      const { lstm, attention, betaW, betaB } = this.w;
      const e = tf.gather(this.decoding.embedding, prev) as tf.Tensor2D;
      const h = inputs.h as tf.Tensor2D;
      const { context } = attendGrid(attention, h, inputs.annotations as tf.Tensor3D, inputs.keys as tf.Tensor3D, (x) =>
        tf.matMul(x, attention.Wa),
      );
      const z = tf.mul(tf.sigmoid(tf.add(tf.matMul(h, betaW), betaB)), context) as tf.Tensor2D;
      const next = lstmStep(lstm, lstmInputProjection(lstm, tf.concat([e, z], 1)), { h, c: inputs.c as tf.Tensor2D });
      return { logProbs: this.decoding.logProbs(this.outputFeatures(next.h, z, e)), state: { h: next.h, c: next.c } };
    });
  }

  toOnnx(opts: OnnxGraphOptions = {}) {
    return encoderDecoderOnnx(this, [this.encoder.onnxInput.name], opts, {
      encoder: (opset) => this.encoderGraph(opset),
      decoder: (opset, storeFrozen) => this.decoderGraph(opset, storeFrozen),
    });
  }

  private encoderGraph(opset: number): GraphBuilder {
    const g = new GraphBuilder('frost-show-attend-tell-encoder', { opset });
    const { hidden: H, attention: att } = this.cfg;
    const { initH, initC, attention } = this.w;
    const { name, dims } = this.encoder.onnxInput;
    const { grid, pooled } = g.scope('encoder', () => this.encoder.toOnnx(g, g.input(name, 'float32', dims)));
    // h₀ = tanh(mean(a) W_h + b_h); c₀ = tanh(mean(a) W_c + b_c)
    const init = (w: { W: tf.Variable; b: tf.Variable }, scope: string) =>
      g.op('Tanh', [
        g.op('Gemm', [
          pooled,
          g.initializer(`${scope}/W`, tensorValue(w.W)),
          g.initializer(`${scope}/b`, tensorValue(w.b)),
        ]),
      ]);
    // keys = a U_a
    const keys = g.op('MatMul', [grid, g.initializer('decoder/attention/Ua', tensorValue(attention.Ua))]);
    g.output(init(initH, 'decoder/init-h'), 'h', 'float32', ['batch', H]);
    g.output(init(initC, 'decoder/init-c'), 'c', 'float32', ['batch', H]);
    g.output(grid, 'annotations', 'float32', ['batch', this.encoder.locations, this.encoder.channels]);
    g.output(keys, 'keys', 'float32', ['batch', this.encoder.locations, att]);
    return g;
  }

  private decoderGraph(opset: number, storeFrozen: boolean): GraphBuilder {
    const g = new GraphBuilder('frost-show-attend-tell-decoder-step', { opset });
    const { hidden: H, attention: att } = this.cfg;
    const { locations: L, channels: D } = this.encoder;
    const { attention: aw, betaW, betaB, lstm } = this.w;
    const prev = g.input('prev_token', 'int64', ['rows']);
    const h = g.input('h', 'float32', ['rows', H]);
    const c = g.input('c', 'float32', ['rows', H]);
    const annotations = g.input('annotations', 'float32', ['rows', L, D]);
    const keys = g.input('keys', 'float32', ['rows', L, att]);
    // e = E[y_{t-1}]
    const { e, embedding } = this.decoding.embedOnnx(g, prev);
    // α = softmax_i(v · tanh(keys_i + h W_a + b_a))
    const q = g.unsqueeze(
      g.op('Gemm', [
        h,
        g.initializer('decoder/attention/Wa', tensorValue(aw.Wa)),
        g.initializer('decoder/attention/ba', tensorValue(aw.ba)),
      ]),
      [1],
    );
    const scores = g.squeeze(
      g.op('MatMul', [g.op('Tanh', [g.op('Add', [keys, q])]), g.initializer('decoder/attention/v', tensorValue(aw.v))]),
      [2],
    );
    const alpha = g.op('Softmax', [scores], { axis: 1 });
    // ẑ = σ(h W_β + b_β) · Σ_i α_i a_i
    const context = g.squeeze(g.op('MatMul', [g.unsqueeze(alpha, [1]), annotations]), [1]);
    const beta = g.op('Sigmoid', [
      g.op('Gemm', [
        h,
        g.initializer('decoder/beta/W', tensorValue(betaW)),
        g.initializer('decoder/beta/b', tensorValue(betaB)),
      ]),
    ]);
    const z = g.op('Mul', [beta, context]);
    // (h', c') = LSTM([e; ẑ], (h, c))
    const next = lstmOnnxStep(g, lstm, 'decoder/lstm', g.op('Concat', [e, z], { axis: 1 }), { h, c });
    // f = tanh([h'; ẑ; e] W_o + b_o); log_probs = log_softmax(head(f))
    const f = g.op('Tanh', [
      g.op('Gemm', [
        g.op('Concat', [next.h, z, e], { axis: 1 }),
        g.initializer('decoder/out/W', tensorValue(this.w.outW)),
        g.initializer('decoder/out/b', tensorValue(this.w.outB)),
      ]),
    ]);
    this.decoding.logProbsOnnx(g, f, embedding, storeFrozen);
    g.output(next.h, 'next_h', 'float32', ['rows', H]);
    g.output(next.c, 'next_c', 'float32', ['rows', H]);
    return g;
  }
}

registerArch<ShowAttendTellConfig>({
  name: 'show-attend-tell',
  summary: 'Show, Attend and Tell (Xu et al.): LSTM with soft attention over the CNN grid, gating scalar β',
  tasks: ['caption'],
  inputKind: 'image',
  presets,
  settings,
  build: (config, sizes, head, seed) => new ShowAttendTellModel(config, sizes, head, seed),
});
