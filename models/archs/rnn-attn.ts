import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { SeededRandom } from '../../core/random.ts';
import { buildHead } from '../heads/index.ts';
import type { OutputHead } from '../heads/types.ts';
import {
  attend,
  attentionKeys,
  attentionSteps,
  createAttention,
  MASKED_SCORE,
  type AttentionWeights,
} from '../layers/attention.ts';
import {
  createGru,
  gruInputProjection,
  gruOnnxWeights,
  gruStep,
  gruStepOnnx,
  gruStepWith,
  type GruWeights,
} from '../layers/gru.ts';
import { seededDropout } from '../layers/dropout.ts';
import { sharedWeightMatMul } from '../layers/shared-matmul.ts';
import { headCrossEntropySum, type TokenLossOptions } from '../loss.ts';
import { tensorValue } from '../onnx-values.ts';
import { packTargets, permuteRows } from '../packed-steps.ts';
import { ParamStore } from '../params.ts';
import { timeMajor } from '../time-major.ts';
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
import { emitStepLogProbs, encoderDecoderOnnx } from './graph-spec.ts';

const settings = z.strictObject({
  /** Word embedding size e (source and target). */
  embedding: z.number().int().positive(),
  /** Decoder GRU size H. */
  hidden: z.number().int().positive(),
  /** Encoder GRU size per direction; annotations are twice this (OpenNMT's brnn splits the size the same way). */
  encoderHidden: z.number().int().positive(),
  /** Attention MLP size. */
  attention: z.number().int().positive(),
  /** Size d of f, the vector the output head scores. */
  output: z.number().int().positive(),
  /** Dropout on embeddings and on f while training. */
  dropout: z.number().min(0).lt(1),
});

/**
 * Bahdanau-style attention encoder-decoder.
 *   encoder: bidirectional GRU over source embeddings; annotations h_j = [→h_j; ←h_j]
 *   s_0     = tanh(mean_j(h_j) Ws + bs)
 *   step t: c_t = attend(s_{t-1}, h)                       (additive attention)
 *           s_t = GRU([E y_{t-1}; c_t], s_{t-1})
 *           f_t = tanh([s_t; c_t; E y_{t-1}] Wo + bo)     → the output head scores f_t
 */
export type RnnAttnConfig = z.infer<typeof settings>;

const presets: Record<string, RnnAttnConfig> = {
  tiny: { embedding: 64, hidden: 128, encoderHidden: 64, attention: 64, output: 96, dropout: 0 },
  small: { embedding: 256, hidden: 512, encoderHidden: 256, attention: 512, output: 512, dropout: 0.2 },
  paper: { embedding: 512, hidden: 1024, encoderHidden: 512, attention: 1024, output: 1024, dropout: 0.3 },
};

interface Weights {
  srcEmbedding: tf.Variable;
  tgtEmbedding: tf.Variable;
  encFwd: GruWeights;
  encBwd: GruWeights;
  initW: tf.Variable;
  initB: tf.Variable;
  attention: AttentionWeights;
  decoder: GruWeights;
  outW: tf.Variable;
  outB: tf.Variable;
}

class RnnAttnModel implements Seq2SeqModel {
  readonly arch = 'rnn-attn';
  readonly inputKind = 'tokens';
  readonly params: ParamStore;
  readonly head: OutputHead;
  readonly stateNames = ['state'];
  readonly memoryNames = ['enc_out', 'enc_keys', 'src_mask'];
  private readonly w: Weights;
  private readonly dropoutRng: SeededRandom;

  constructor(
    private readonly cfg: RnnAttnConfig,
    private readonly sizes: ModelSizes & { srcVocab: number },
    headSpec: { name: string; options?: Record<string, unknown> },
    seed: number,
  ) {
    const p = new ParamStore(seed);
    this.dropoutRng = new SeededRandom(seed, 'dropout');
    this.params = p;
    const { embedding: e, hidden: H, encoderHidden: eh, attention: att, output: d } = cfg;
    const A = 2 * eh;
    const uniformEmb = { kind: 'uniform', limit: 0.1 } as const;
    if (sizes.jointEmbedding && sizes.srcVocab !== sizes.tgtVocab) {
      throw new RangeError(
        `rnn-attn: a joint embedding needs one vocabulary, got srcVocab ${sizes.srcVocab} and tgtVocab ${sizes.tgtVocab}`,
      );
    }
    // Joint vocabulary: one matrix E for the source lookup, the target lookup and (tied/shared heads) the output.
    const srcEmbedding = sizes.jointEmbedding
      ? undefined
      : p.variable('encoder/embedding', [sizes.srcVocab, e], uniformEmb);
    const encFwd = createGru(p, 'encoder/fwd', e, eh);
    const encBwd = createGru(p, 'encoder/bwd', e, eh);
    const initW = p.variable('decoder/init/W', [A, H], { kind: 'glorot-uniform' });
    const initB = p.variable('decoder/init/b', [H], { kind: 'zeros' });
    const tgtEmbedding = p.variable('decoder/embedding', [sizes.tgtVocab, e], uniformEmb);
    this.w = {
      srcEmbedding: srcEmbedding ?? tgtEmbedding,
      encFwd,
      encBwd,
      initW,
      initB,
      tgtEmbedding,
      attention: createAttention(p, 'decoder/attention', A, H, att),
      decoder: createGru(p, 'decoder/gru', e + A, H),
      outW: p.variable('decoder/out/W', [H + A + e, d], { kind: 'glorot-uniform' }),
      outB: p.variable('decoder/out/b', [d], { kind: 'zeros' }),
    };
    this.head = buildHead(
      headSpec.name,
      {
        vocabSize: sizes.tgtVocab,
        inputDim: d,
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

  private dropout<T extends tf.Tensor>(x: T, training: boolean): T {
    // Seeded per call from the model's own stream, so a run is reproducible from its seed.
    return training && this.cfg.dropout > 0 ? seededDropout(x, this.cfg.dropout, this.dropoutRng.nextUint32()) : x;
  }

  /** Annotations [B, S, A], keys, mask and s_0 for time-major embedded sources. */
  private encodeEmbedded(xTime: tf.Tensor2D, B: number, S: number, srcMask: tf.Tensor2D): NamedTensors {
    const { encFwd, encBwd, initW, initB, attention } = this.w;
    const eh = this.cfg.encoderHidden;
    const gxF = tf.unstack(tf.reshape(gruInputProjection(encFwd, xTime), [S, B, 3 * eh])) as tf.Tensor2D[];
    const gxB = tf.unstack(tf.reshape(gruInputProjection(encBwd, xTime), [S, B, 3 * eh])) as tf.Tensor2D[];
    const maskT = tf.unstack(tf.reshape(tf.transpose(srcMask), [S, B, 1])) as tf.Tensor2D[];
    const zeros = tf.zeros([B, eh]) as tf.Tensor2D;
    const fwd: tf.Tensor2D[] = [];
    const bwd: tf.Tensor2D[] = new Array(S);
    // Wh's gradient once per direction, not per step (shared-matmul.ts); same forward values.
    const hWhF = sharedWeightMatMul(encFwd.Wh);
    const hWhB = sharedWeightMatMul(encBwd.Wh);
    let h = zeros;
    for (let t = 0; t < S; t++) {
      // Padded steps keep the previous state, so a sequence's last state ignores its padding.
      h = gruStepWith(encFwd, gxF[t], h, hWhF, { mask: maskT[t] });
      fwd.push(h);
    }
    h = zeros;
    for (let t = S - 1; t >= 0; t--) {
      h = gruStepWith(encBwd, gxB[t], h, hWhB, { mask: maskT[t] });
      bwd[t] = h;
    }
    const encOut = tf.transpose(tf.concat([tf.stack(fwd), tf.stack(bwd)], 2), [1, 0, 2]) as tf.Tensor3D;
    const lengths = tf.sum(srcMask, 1, true);
    const mean = tf.div(tf.sum(tf.mul(encOut, tf.expandDims(srcMask, 2)), 1), lengths) as tf.Tensor2D;
    const state = tf.tanh(tf.add(tf.matMul(mean, initW), initB));
    return { state, enc_out: encOut, enc_keys: attentionKeys(attention, encOut), src_mask: srcMask };
  }

  private embedTimeMajor(
    E: tf.Variable,
    ids: Int32Array | tf.Tensor2D,
    B: number,
    L: number,
    training: boolean,
  ): tf.Tensor2D {
    const idsT = ids instanceof Int32Array ? tf.tensor2d(timeMajor(ids, B, L), [L, B], 'int32') : tf.transpose(ids);
    return this.dropout(tf.gather(E, tf.reshape(idsT, [-1])) as tf.Tensor2D, training) as tf.Tensor2D;
  }

  private static maskFromLengths(srcLen: tf.Tensor1D, S: number): tf.Tensor2D {
    const positions = tf.expandDims(tf.range(0, S, 1, 'int32'), 0) as tf.Tensor2D;
    return tf.cast(tf.less(positions, tf.expandDims(srcLen, 1)), 'float32') as tf.Tensor2D;
  }

  /** f = tanh([s; c; e] Wo + bo). */
  private outputFeatures(s: tf.Tensor2D, c: tf.Tensor2D, e: tf.Tensor2D): tf.Tensor2D {
    return tf.tanh(tf.add(tf.matMul(tf.concat([s, c, e], 1), this.w.outW), this.w.outB)) as tf.Tensor2D;
  }

  lossSum(modelBatch: ModelBatch, training: boolean, loss?: TokenLossOptions): tf.Scalar {
    const batch = expectBatch(this.arch, 'tokens', modelBatch);
    return tf.tidy(() => {
      const { B, S } = batch;
      const e = this.cfg.embedding;
      // Longest target first, so step t runs only the counts[t] sentences not yet finished.
      const packed = packTargets(batch);
      const { steps } = packed;
      const srcLen = tf.tensor1d(permuteRows(batch.srcLen, steps.order, 1), 'int32');
      const srcMask = RnnAttnModel.maskFromLengths(srcLen, S);
      const src = permuteRows(batch.src, steps.order, S);
      const mem = this.encodeEmbedded(this.embedTimeMajor(this.w.srcEmbedding, src, B, S, training), B, S, srcMask);
      const embT = this.dropout(
        tf.gather(this.w.tgtEmbedding, tf.tensor1d(packed.inputs, 'int32')) as tf.Tensor2D,
        training,
      );
      const { decoder, attention } = this.w;
      // The embedding's share of the GRU input projection, for all steps at once; the context's share needs c_t.
      // One split, not two slices: its gradient is one Concat, theirs two full-size pads and an Add.
      const [WxE, WxC] = tf.split(decoder.Wx, [e, decoder.Wx.shape[0] - e], 0) as tf.Tensor2D[];
      const preX = tf.split(tf.add(tf.matMul(embT, WxE), decoder.bx), steps.counts, 0) as tf.Tensor2D[];
      const encOut = mem.enc_out as tf.Tensor3D;
      const keys = mem.enc_keys as tf.Tensor3D;
      let s = mem.state as tf.Tensor2D;
      const states: tf.Tensor2D[] = [];
      const contexts: tf.Tensor2D[] = [];
      // The weights every step multiplies by get their gradient once, over all steps (shared-matmul.ts).
      const attendStep = attentionSteps(attention, encOut, keys, srcMask, sharedWeightMatMul(attention.Wa));
      const cWxC = sharedWeightMatMul(WxC);
      const sWh = sharedWeightMatMul(decoder.Wh);
      for (const [t, n] of steps.counts.entries()) {
        if (s.shape[0] > n) s = tf.slice(s, 0, n);
        const c = attendStep(s);
        s = gruStepWith(decoder, preX[t], s, sWh, { gx2: cWxC(c) });
        states.push(s);
        contexts.push(c);
      }
      const f = this.dropout(this.outputFeatures(tf.concat(states, 0), tf.concat(contexts, 0), embT), training);
      return headCrossEntropySum(
        this.head,
        f,
        tf.tensor1d(packed.targets, 'int32'),
        tf.tensor1d(packed.mask, 'float32'),
        training,
        loss,
      );
    });
  }

  encode(input: EncoderInput): NamedTensors {
    const { ids: src, lengths: srcLen } = expectInput(this.arch, 'tokens', input);
    return tf.tidy(() => {
      const [B, S] = src.shape;
      const srcMask = RnnAttnModel.maskFromLengths(srcLen, S);
      return this.encodeEmbedded(this.embedTimeMajor(this.w.srcEmbedding, src, B, S, false), B, S, srcMask);
    });
  }

  step(prev: tf.Tensor1D, inputs: NamedTensors): { logProbs: tf.Tensor2D; state: NamedTensors } {
    return tf.tidy(() => {
      const { decoder, attention, tgtEmbedding } = this.w;
      const e = tf.gather(tgtEmbedding, prev) as tf.Tensor2D;
      const s = inputs.state as tf.Tensor2D;
      const c = attend(
        attention,
        s,
        inputs.enc_out as tf.Tensor3D,
        inputs.enc_keys as tf.Tensor3D,
        inputs.src_mask as tf.Tensor2D,
      );
      const next = gruStep(decoder, gruInputProjection(decoder, tf.concat([e, c], 1)), s);
      const logits = this.head.logits(this.outputFeatures(next, c, e), false);
      return { logProbs: tf.logSoftmax(logits, 1), state: { state: next } };
    });
  }

  toOnnx(opts: OnnxGraphOptions = {}) {
    return encoderDecoderOnnx(this, ['src_ids', 'src_lengths'], opts, {
      encoder: (opset) => this.encoderGraph(opset),
      decoder: (opset, storeFrozen) => this.decoderGraph(opset, storeFrozen),
    });
  }

  private encoderGraph(opset: number): GraphBuilder {
    const g = new GraphBuilder('frost-rnn-attn-encoder', { opset });
    const { encoderHidden: eh, hidden: H, attention: att } = this.cfg;
    const A = 2 * eh;
    const ids = g.input('src_ids', 'int64', ['batch', 'src_len']);
    const lengths = g.input('src_lengths', 'int64', ['batch']);
    // x = E[src_ids], time-major for the GRU node
    const x = g.op(
      'Transpose',
      [g.op('Gather', [g.initializer('encoder/embedding', tensorValue(this.w.srcEmbedding)), ids])],
      { perm: [1, 0, 2] },
    );
    // Y [S, 2, B, eh] = biGRU(x) over each row's own length
    const gw = gruOnnxWeights([this.w.encFwd, this.w.encBwd]);
    const Y = g.op(
      'GRU',
      [
        x,
        g.initializer('encoder/gru/W', { dtype: 'float32', dims: [2, 3 * eh, gw.input], data: gw.W }),
        g.initializer('encoder/gru/R', { dtype: 'float32', dims: [2, 3 * eh, eh], data: gw.R }),
        g.initializer('encoder/gru/B', { dtype: 'float32', dims: [2, 6 * eh], data: gw.B }),
        g.op('Cast', [lengths], { to: 6 /* int32 */ }),
      ],
      { direction: 'bidirectional', hidden_size: eh, linear_before_reset: 1 },
    );
    // enc_out [B, S, A] = [→h; ←h]
    const encOut = g.op('Reshape', [g.op('Transpose', [Y], { perm: [2, 0, 1, 3] }), g.constInt64([0, 0, A])]);
    // src_mask [B, S] = position < length
    const S = g.op('Gather', [g.op('Shape', [ids]), g.constInt64(1)]);
    const positions = g.op('Range', [g.constInt64(0), S, g.constInt64(1)]);
    const mask = g.op('Cast', [g.op('Less', [g.unsqueeze(positions, [0]), g.unsqueeze(lengths, [1])])], {
      to: 1 /* float */,
    });
    // state = tanh(mean_j(h_j) Ws + bs)
    const summed = g.reduce('ReduceSum', g.op('Mul', [encOut, g.unsqueeze(mask, [2])]), [1], false);
    const mean = g.op('Div', [summed, g.op('Cast', [g.unsqueeze(lengths, [1])], { to: 1 })]);
    const state = g.op('Tanh', [
      g.op('Gemm', [
        mean,
        g.initializer('decoder/init/W', tensorValue(this.w.initW)),
        g.initializer('decoder/init/b', tensorValue(this.w.initB)),
      ]),
    ]);
    // enc_keys = enc_out Ua
    const keys = g.op('MatMul', [encOut, g.initializer('decoder/attention/Ua', tensorValue(this.w.attention.Ua))]);
    g.output(state, 'state', 'float32', ['batch', H]);
    g.output(encOut, 'enc_out', 'float32', ['batch', 'src_len', A]);
    g.output(keys, 'enc_keys', 'float32', ['batch', 'src_len', att]);
    g.output(mask, 'src_mask', 'float32', ['batch', 'src_len']);
    return g;
  }

  private decoderGraph(opset: number, storeFrozen: boolean): GraphBuilder {
    const g = new GraphBuilder('frost-rnn-attn-decoder-step', { opset });
    const { encoderHidden: eh, hidden: H, attention: att } = this.cfg;
    const A = 2 * eh;
    const V = this.sizes.tgtVocab;
    const prev = g.input('prev_token', 'int64', ['rows']);
    const s = g.input('state', 'float32', ['rows', H]);
    const encOut = g.input('enc_out', 'float32', ['rows', 'src_len', A]);
    const keys = g.input('enc_keys', 'float32', ['rows', 'src_len', att]);
    const mask = g.input('src_mask', 'float32', ['rows', 'src_len']);
    // Heads that rescale E's rows store E once for both the lookup and the output projection.
    const shared = this.head.sharedEmbeddingOnnx?.(g);
    const embedding = shared?.matrix ?? g.initializer('decoder/embedding', tensorValue(this.w.tgtEmbedding));
    const { attention: aw, decoder } = this.w;
    // e = E[y_{t-1}]
    const e = shared ? shared.lookup(prev) : g.op('Gather', [embedding, prev]);
    // scores_j = v · tanh(keys_j + s Wa + ba), padded j → -1e9
    const q = g.unsqueeze(
      g.op('Gemm', [
        s,
        g.initializer('decoder/attention/Wa', tensorValue(aw.Wa)),
        g.initializer('decoder/attention/ba', tensorValue(aw.ba)),
      ]),
      [1],
    );
    const energy = g.op('Tanh', [g.op('Add', [keys, q])]);
    const scores = g.squeeze(g.op('MatMul', [energy, g.initializer('decoder/attention/v', tensorValue(aw.v))]), [2]);
    const masked = g.op('Add', [
      scores,
      g.op('Mul', [g.op('Sub', [mask, g.constFloat(1)]), g.constFloat(MASKED_SCORE)]),
    ]);
    // c = softmax(scores) · enc_out
    const alpha = g.op('Softmax', [masked], { axis: 1 });
    const c = g.squeeze(g.op('MatMul', [g.unsqueeze(alpha, [1]), encOut]), [1]);
    // s' = GRU([e; c], s), one time step as Gemms (layers/gru.ts), which int8-compute can quantise
    const next = gruStepOnnx(g, decoder, 'decoder/gru', g.op('Concat', [e, c], { axis: 1 }), s);
    // f = tanh([s'; c; e] Wo + bo); log_probs = log_softmax(head(f))
    const f = g.op('Tanh', [
      g.op('Gemm', [
        g.op('Concat', [next, c, e], { axis: 1 }),
        g.initializer('decoder/out/W', tensorValue(this.w.outW)),
        g.initializer('decoder/out/b', tensorValue(this.w.outB)),
      ]),
    ]);
    const logits = g.scope('head', () => this.head.toOnnx(g, f, { embedding, storeFrozen }));
    emitStepLogProbs(g, logits, V);
    g.output(next, 'next_state', 'float32', ['rows', H]);
    return g;
  }
}

registerArch<RnnAttnConfig>({
  name: 'rnn-attn',
  summary: 'Bahdanau attention: bidirectional GRU encoder, GRU decoder, additive attention',
  tasks: ['translation'],
  inputKind: 'tokens',
  presets,
  settings,
  build: (config, sizes, head, seed) => {
    if (sizes.srcVocab === undefined) throw new TypeError('rnn-attn needs a source vocabulary size (sizes.srcVocab)');
    return new RnnAttnModel(config, { ...sizes, srcVocab: sizes.srcVocab }, head, seed);
  },
});
