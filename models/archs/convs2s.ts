import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { SeededRandom } from '../../core/random.ts';
import { buildHead } from '../heads/index.ts';
import type { OutputHead } from '../heads/types.ts';
import {
  convs2sAttend,
  convs2sAttendStepOnnx,
  convs2sPenaltyOnnx,
  createConvs2sAttention,
  type Convs2sAttention,
} from '../layers/convs2s-attention.ts';
import {
  convs2sConv,
  convs2sConvOnnx,
  convs2sConvStep,
  convs2sConvStepOnnx,
  convs2sZeroWindowOnnx,
  createConvs2sConv,
  type Convs2sConv,
} from '../layers/convs2s-glu-conv.ts';
import {
  convs2sPositionRange,
  convs2sPositionsAt,
  convs2sPositionsOnnx,
  createConvs2sPositions,
  type Convs2sPositions,
} from '../layers/convs2s-positions.ts';
import { seededDropout } from '../layers/dropout.ts';
import { headCrossEntropySum, type TokenLossOptions } from '../loss.ts';
import { tensorValue } from '../onnx-values.ts';
import { ParamStore } from '../params.ts';
import { parseConvs2sLayers, CONVS2S_LAYERS_PATTERN, type Convs2sLayerSpec } from './convs2s-layers.ts';
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

const HALF = Math.SQRT1_2;

const settings = z.strictObject({
  /** Word and position embedding size e (source and target). */
  embedding: z.number().int().positive(),
  /** Encoder convolutions, `channels:width*count` joined by commas (widths odd). */
  encoderLayers: z.string().regex(CONVS2S_LAYERS_PATTERN, 'expects channels:width*count joined by commas'),
  /** Decoder convolutions, same form (any width >= 1). */
  decoderLayers: z.string().regex(CONVS2S_LAYERS_PATTERN, 'expects channels:width*count joined by commas'),
  /** Size d of f, the vector the output head scores (fairseq's decoder_out_embed_dim). */
  output: z.number().int().positive(),
  /** Rows of the learned position tables; later positions reuse the last row. */
  maxPositions: z.number().int().positive(),
  /** Dropout on embeddings, convolution inputs and f while training. */
  dropout: z.number().min(0).lt(1),
});

/**
 * Convolutional sequence to sequence learning (Gehring et al. 2017), as fairseq's `fconv`:
 *   encoder: x = E[src] + P[pos] → Linear(e→C₀) → per layer: (GLU(conv(x)) + res(x))·√0.5
 *            keys z = Linear(C→e)(x), values v = (z + E[src] + P[pos])·√0.5
 *   decoder: g = E[y] + P[pos] → Linear(e→C₀) → per layer: h = GLU(causal conv(x));
 *            h = attention(h, g, z, v); x = (h + res(x))·√0.5
 *            f = Linear(C→d)(x) → the output head scores f
 * The decoder step carries, per layer of width k > 1, its convolution's last k−1 inputs and the
 * position index as state, so a step costs the same at any position (docs/convs2s.md).
 */
export type Convs2sConfig = z.infer<typeof settings>;

/** `wmt` is the paper's WMT'14 en→de model (fairseq's fconv_wmt_en_de); `small` fairseq's fconv_iwslt_de_en. */
const presets: Record<string, Convs2sConfig> = {
  tiny: {
    embedding: 64,
    encoderLayers: '96:3*3',
    decoderLayers: '96:3*3',
    output: 48,
    maxPositions: 128,
    dropout: 0,
  },
  small: {
    embedding: 256,
    encoderLayers: '256:3*4',
    decoderLayers: '256:3*3',
    output: 256,
    maxPositions: 256,
    dropout: 0.2,
  },
  wmt: {
    embedding: 768,
    encoderLayers: '512:3*9,1024:3*4,2048:1*2',
    decoderLayers: '512:3*9,1024:3*4,2048:1*2',
    output: 512,
    maxPositions: 1024,
    dropout: 0.2,
  },
};

interface Linear {
  W: tf.Variable;
  b: tf.Variable;
}

interface ConvLayer {
  conv: Convs2sConv;
  /** A projection of the residual when the layer changes the channel count. */
  residual?: Linear;
}

interface DecoderLayer extends ConvLayer {
  attention: Convs2sAttention;
}

/** Scales the gradient flowing back by `scale`, the value unchanged (fairseq's GradMultiply). */
function scaleGradient<T extends tf.Tensor>(x: T, scale: number): T {
  const op = tf.customGrad(((input: tf.Tensor) => ({
    value: tf.clone(input),
    gradFunc: (dy: tf.Tensor) => tf.mul(dy, scale),
  })) as unknown as Parameters<typeof tf.customGrad>[0]);
  return op(x) as T;
}

function linear3d(w: Linear, x: tf.Tensor3D): tf.Tensor3D {
  const [B, T, C] = x.shape;
  return tf.reshape(tf.add(tf.matMul(tf.reshape(x, [B * T, C]), w.W), w.b), [B, T, -1]);
}

function linear2d(w: Linear, x: tf.Tensor2D): tf.Tensor2D {
  return tf.add(tf.matMul(x, w.W), w.b);
}

export class Convs2sModel implements Seq2SeqModel {
  readonly arch = 'convs2s';
  readonly inputKind = 'tokens';
  readonly params: ParamStore;
  readonly head: OutputHead;
  readonly stateNames: string[];
  readonly memoryNames = ['enc_keys', 'enc_values', 'src_mask'];
  private readonly srcEmbedding: tf.Variable;
  private readonly tgtEmbedding: tf.Variable;
  private readonly srcPositions: Convs2sPositions;
  private readonly tgtPositions: Convs2sPositions;
  private readonly encIn: Linear;
  private readonly encOut: Linear;
  private readonly encoder: ConvLayer[];
  private readonly decIn: Linear;
  private readonly decOut: Linear;
  private readonly decoder: DecoderLayer[];
  /** Indices of the decoder layers with a window (width > 1), in the order of their state names. */
  private readonly windowed: number[];
  private readonly dropoutRng: SeededRandom;

  constructor(
    private readonly cfg: Convs2sConfig,
    private readonly sizes: ModelSizes & { srcVocab: number },
    headSpec: { name: string; options?: Record<string, unknown> },
    seed: number,
  ) {
    const p = new ParamStore(seed);
    this.params = p;
    this.dropoutRng = new SeededRandom(seed, 'dropout');
    const { embedding: e, output: d, dropout } = cfg;
    const encSpec = parseConvs2sLayers(cfg.encoderLayers, 'encoderLayers');
    const decSpec = parseConvs2sLayers(cfg.decoderLayers, 'decoderLayers');
    for (const l of encSpec) {
      if (l.width % 2 === 0)
        throw new RangeError(`convs2s: encoder convolutions need odd widths (centred), got ${l.width}`);
    }
    if (sizes.jointEmbedding && sizes.srcVocab !== sizes.tgtVocab) {
      throw new RangeError(
        `convs2s: a joint embedding needs one vocabulary, got srcVocab ${sizes.srcVocab} and tgtVocab ${sizes.tgtVocab}`,
      );
    }
    const emb = { kind: 'uniform', limit: 0.1 * Math.sqrt(3) } as const;
    const linear = (name: string, inDim: number, outDim: number, keep = 1): Linear => ({
      W: p.variable(`${name}/W`, [inDim, outDim], { kind: 'uniform', limit: Math.sqrt((3 * keep) / inDim) }),
      b: p.variable(`${name}/b`, [outDim], { kind: 'zeros' }),
    });
    const srcEmbedding = sizes.jointEmbedding ? undefined : p.variable('encoder/embedding', [sizes.srcVocab, e], emb);
    this.srcPositions = createConvs2sPositions(p, 'encoder/positions', cfg.maxPositions, e);
    this.encIn = linear('encoder/in', e, encSpec[0]!.channels, 1 - dropout);
    this.encoder = this.convStack(p, 'encoder', encSpec, dropout, linear);
    this.encOut = linear('encoder/out', encSpec[encSpec.length - 1]!.channels, e);
    this.tgtEmbedding = p.variable('decoder/embedding', [sizes.tgtVocab, e], emb);
    this.srcEmbedding = srcEmbedding ?? this.tgtEmbedding;
    this.tgtPositions = createConvs2sPositions(p, 'decoder/positions', cfg.maxPositions, e);
    this.decIn = linear('decoder/in', e, decSpec[0]!.channels, 1 - dropout);
    this.decoder = this.convStack(p, 'decoder', decSpec, dropout, linear).map((layer, i) => ({
      ...layer,
      attention: createConvs2sAttention(p, `decoder/layer${i}/attention`, layer.conv.outChannels, e),
    }));
    this.decOut = linear('decoder/out', decSpec[decSpec.length - 1]!.channels, d);
    this.windowed = this.decoder.flatMap((l, i) => (l.conv.width > 1 ? [i] : []));
    this.stateNames = [...this.windowed.map((i) => `window${i}`), 'position'];
    this.head = buildHead(
      headSpec.name,
      {
        vocabSize: sizes.tgtVocab,
        inputDim: d,
        embedding: this.tgtEmbedding,
        params: p,
        seed,
        dropout,
        excludedTargets: sizes.excludedTargets,
        compactOutput: sizes.compactOutput,
      },
      headSpec.options,
    );
  }

  private convStack(
    p: ParamStore,
    side: string,
    spec: Convs2sLayerSpec[],
    dropout: number,
    linear: (name: string, inDim: number, outDim: number) => Linear,
  ): ConvLayer[] {
    let inC = spec[0]!.channels;
    return spec.map((l, i) => {
      const prefix = `${side}/layer${i}`;
      const layer: ConvLayer = {
        conv: createConvs2sConv(p, `${prefix}/conv`, l.width, inC, l.channels, dropout),
        ...(inC === l.channels ? {} : { residual: linear(`${prefix}/residual`, inC, l.channels) }),
      };
      inC = l.channels;
      return layer;
    });
  }

  private dropout<T extends tf.Tensor>(x: T, training: boolean): T {
    return training && this.cfg.dropout > 0 ? seededDropout(x, this.cfg.dropout, this.dropoutRng.nextUint32()) : x;
  }

  /** E[ids] + P[0..L−1]: [B, L, e]. */
  private embed(E: tf.Variable, P: Convs2sPositions, ids: tf.Tensor2D, training: boolean): tf.Tensor3D {
    const [B, L] = ids.shape;
    const words = tf.reshape(tf.gather(E, tf.reshape(ids, [-1])), [B, L, -1]);
    return this.dropout(tf.add(words, convs2sPositionRange(P, L)) as tf.Tensor3D, training);
  }

  private static maskFromLengths(srcLen: tf.Tensor1D, S: number): tf.Tensor2D {
    const positions = tf.expandDims(tf.range(0, S, 1, 'int32'), 0) as tf.Tensor2D;
    return tf.cast(tf.less(positions, tf.expandDims(srcLen, 1)), 'float32') as tf.Tensor2D;
  }

  /** Keys transposed [B, e, S], values [B, S, e] (pre-scaled by √length) and the mask [B, S]. */
  private encodeIds(ids: tf.Tensor2D, srcLen: tf.Tensor1D, training: boolean): NamedTensors {
    const S = ids.shape[1];
    const mask = Convs2sModel.maskFromLengths(srcLen, S);
    const mask3 = tf.expandDims(mask, 2);
    const inputEmbedding = this.embed(this.srcEmbedding, this.srcPositions, ids, training);
    let x = linear3d(this.encIn, inputEmbedding);
    for (const layer of this.encoder) {
      const residual = layer.residual ? linear3d(layer.residual, x) : x;
      // Padding is zeroed before every convolution, so a row's outputs do not depend on its padding.
      const h = convs2sConv(layer.conv, this.dropout(tf.mul(x, mask3) as tf.Tensor3D, training), 'centered');
      x = tf.mul(tf.add(h, residual), HALF);
    }
    // fairseq scales the encoder's gradient by 1 / (2 · attention layers): every decoder layer reads it twice.
    const keys = scaleGradient(tf.mul(linear3d(this.encOut, x), mask3) as tf.Tensor3D, 1 / (2 * this.decoder.length));
    const values = tf.mul(tf.add(keys, inputEmbedding), tf.mul(tf.expandDims(tf.sqrt(tf.sum(mask, 1, true)), 2), HALF));
    return { enc_keys: tf.transpose(keys, [0, 2, 1]), enc_values: values, src_mask: mask };
  }

  /**
   * Log-probabilities [B, T, |V|] of the whole decoder run at once over tgtIn [B, T] (teacher forcing,
   * as in training): what the incremental decoder's steps must reproduce.
   */
  teacherForcedLogProbs(input: EncoderInput, tgtIn: tf.Tensor2D): tf.Tensor3D {
    const { ids, lengths } = expectInput(this.arch, 'tokens', input);
    return tf.tidy(() => {
      const [B, T] = tgtIn.shape;
      const f = this.decodeAll(tgtIn, this.encodeIds(ids, lengths, false), false);
      return tf.reshape(tf.logSoftmax(this.head.logits(f, false), 1), [B, T, -1]) as tf.Tensor3D;
    });
  }

  /** The whole decoder over tgtIn [B, T] (teacher forcing): f [B·T, d]. */
  private decodeAll(tgtIn: tf.Tensor2D, memory: NamedTensors, training: boolean): tf.Tensor2D {
    const [B, T] = tgtIn.shape;
    const g = this.embed(this.tgtEmbedding, this.tgtPositions, tgtIn, training);
    let x = linear3d(this.decIn, g);
    const keysT = memory.enc_keys as tf.Tensor3D;
    const values = memory.enc_values as tf.Tensor3D;
    const mask = memory.src_mask as tf.Tensor2D;
    for (const layer of this.decoder) {
      const residual = layer.residual ? linear3d(layer.residual, x) : x;
      const h = convs2sConv(layer.conv, this.dropout(x, training), 'causal');
      const attended = convs2sAttend(layer.attention, h, g, keysT, values, mask);
      x = tf.mul(tf.add(attended, residual), HALF);
    }
    return this.dropout(tf.reshape(linear3d(this.decOut, x), [B * T, this.cfg.output]) as tf.Tensor2D, training);
  }

  lossSum(modelBatch: ModelBatch, training: boolean, loss?: TokenLossOptions): tf.Scalar {
    const batch = expectBatch(this.arch, 'tokens', modelBatch);
    return tf.tidy(() => {
      const { B, S, T } = batch;
      const memory = this.encodeIds(
        tf.tensor2d(batch.src, [B, S], 'int32'),
        tf.tensor1d(batch.srcLen, 'int32'),
        training,
      );
      const f = this.decodeAll(tf.tensor2d(batch.tgtIn, [B, T], 'int32'), memory, training);
      return headCrossEntropySum(
        this.head,
        f,
        tf.tensor1d(batch.tgtOut, 'int32'),
        tf.tensor1d(batch.tgtMask, 'float32'),
        training,
        loss,
      );
    });
  }

  encode(input: EncoderInput): NamedTensors {
    const { ids, lengths } = expectInput(this.arch, 'tokens', input);
    return tf.tidy(() => {
      const memory = this.encodeIds(ids, lengths, false);
      const B = ids.shape[0];
      const state: NamedTensors = { position: tf.zeros([B], 'int32') };
      for (const i of this.windowed) {
        const conv = this.decoder[i]!.conv;
        state[`window${i}`] = tf.zeros([B, conv.width - 1, conv.inChannels]);
      }
      return { ...state, ...memory };
    });
  }

  step(prev: tf.Tensor1D, inputs: NamedTensors): { logProbs: tf.Tensor2D; state: NamedTensors } {
    return tf.tidy(() => {
      const position = inputs.position as tf.Tensor1D;
      const g2 = tf.add(tf.gather(this.tgtEmbedding, prev), convs2sPositionsAt(this.tgtPositions, position));
      const g = tf.expandDims(g2, 1) as tf.Tensor3D;
      let x = linear2d(this.decIn, g2 as tf.Tensor2D);
      const next: NamedTensors = { position: tf.add(position, tf.scalar(1, 'int32')) };
      this.decoder.forEach((layer, i) => {
        const residual = layer.residual ? linear2d(layer.residual, x) : x;
        const { y, window } = convs2sConvStep(layer.conv, x, inputs[`window${i}`] as tf.Tensor3D | undefined);
        if (window) next[`window${i}`] = window;
        const attended = convs2sAttend(
          layer.attention,
          tf.expandDims(y, 1) as tf.Tensor3D,
          g,
          inputs.enc_keys as tf.Tensor3D,
          inputs.enc_values as tf.Tensor3D,
          inputs.src_mask as tf.Tensor2D,
        );
        x = tf.mul(tf.add(tf.squeeze(attended, [1]), residual), HALF) as tf.Tensor2D;
      });
      const logits = this.head.logits(linear2d(this.decOut, x), false);
      return { logProbs: tf.logSoftmax(logits, 1), state: next };
    });
  }

  toOnnx(opts: OnnxGraphOptions = {}) {
    return encoderDecoderOnnx(this, ['src_ids', 'src_lengths'], opts, {
      encoder: (opset) => this.encoderGraph(opset),
      decoder: (opset, storeFrozen) => this.decoderGraph(opset, storeFrozen),
    });
  }

  private encoderGraph(opset: number): GraphBuilder {
    const g = new GraphBuilder('frost-convs2s-encoder', { opset });
    const e = this.cfg.embedding;
    const ids = g.input('src_ids', 'int64', ['batch', 'src_len']);
    const lengths = g.input('src_lengths', 'int64', ['batch']);
    const shape = g.op('Shape', [ids]);
    const batch = g.slice(shape, [0], [1]);
    const S = g.op('Gather', [shape, g.constInt64(1)]);
    const positions = g.op('Range', [g.constInt64(0), S, g.constInt64(1)]);
    const mask = g.op('Cast', [g.op('Less', [g.unsqueeze(positions, [0]), g.unsqueeze(lengths, [1])])], { to: 1 });
    const mask3 = g.unsqueeze(mask, [2]);
    const words = g.op('Gather', [g.initializer('encoder/embedding', tensorValue(this.srcEmbedding)), ids]);
    const inputEmbedding = g.op('Add', [
      words,
      g.unsqueeze(convs2sPositionsOnnx(g, this.srcPositions, 'encoder/positions', positions), [0]),
    ]);
    let x = linearOnnx(g, this.encIn, 'encoder/in', inputEmbedding);
    this.encoder.forEach((layer, i) => {
      const prefix = `encoder/layer${i}`;
      const residual = layer.residual ? linearOnnx(g, layer.residual, `${prefix}/residual`, x) : x;
      const h = convs2sConvOnnx(g, layer.conv, `${prefix}/conv`, g.op('Mul', [x, mask3]));
      x = g.op('Mul', [g.op('Add', [h, residual]), g.constFloat(HALF)]);
    });
    const keys = g.op('Mul', [linearOnnx(g, this.encOut, 'encoder/out', x), mask3]);
    const scale = g.op('Mul', [
      g.op('Sqrt', [g.op('Cast', [g.unsqueeze(lengths, [1, 2])], { to: 1 })]),
      g.constFloat(HALF),
    ]);
    const values = g.op('Mul', [g.op('Add', [keys, inputEmbedding]), scale]);
    for (const i of this.windowed) {
      const conv = this.decoder[i]!.conv;
      g.output(convs2sZeroWindowOnnx(g, conv, batch), `window${i}`, 'float32', [
        'batch',
        conv.width - 1,
        conv.inChannels,
      ]);
    }
    const zeroPositions = g.op('ConstantOfShape', [batch], {
      value: { dtype: 'int64', dims: [1], data: new BigInt64Array([0n]) },
    });
    g.output(zeroPositions, 'position', 'int64', ['batch']);
    g.output(g.op('Transpose', [keys], { perm: [0, 2, 1] }), 'enc_keys', 'float32', ['batch', e, 'src_len']);
    g.output(values, 'enc_values', 'float32', ['batch', 'src_len', e]);
    g.output(mask, 'src_mask', 'float32', ['batch', 'src_len']);
    return g;
  }

  private decoderGraph(opset: number, storeFrozen: boolean): GraphBuilder {
    const g = new GraphBuilder('frost-convs2s-decoder-step', { opset });
    const e = this.cfg.embedding;
    const V = this.sizes.tgtVocab;
    const prev = g.input('prev_token', 'int64', ['rows']);
    const windows = new Map<number, string>();
    for (const i of this.windowed) {
      const conv = this.decoder[i]!.conv;
      windows.set(i, g.input(`window${i}`, 'float32', ['rows', conv.width - 1, conv.inChannels]));
    }
    const position = g.input('position', 'int64', ['rows']);
    const keysT = g.input('enc_keys', 'float32', ['rows', e, 'src_len']);
    const values = g.input('enc_values', 'float32', ['rows', 'src_len', e]);
    const mask = g.input('src_mask', 'float32', ['rows', 'src_len']);
    const shared = this.head.sharedEmbeddingOnnx?.(g);
    const embedding = shared?.matrix ?? g.initializer('decoder/embedding', tensorValue(this.tgtEmbedding));
    const word = shared ? shared.lookup(prev) : g.op('Gather', [embedding, prev]);
    const target = g.op('Add', [word, convs2sPositionsOnnx(g, this.tgtPositions, 'decoder/positions', position)]);
    const memory = { keysT, values, penalty: convs2sPenaltyOnnx(g, mask) };
    let x = gemmOnnx(g, this.decIn, 'decoder/in', target);
    this.decoder.forEach((layer, i) => {
      const prefix = `decoder/layer${i}`;
      const residual = layer.residual ? gemmOnnx(g, layer.residual, `${prefix}/residual`, x) : x;
      const { y, window } = convs2sConvStepOnnx(g, layer.conv, `${prefix}/conv`, x, windows.get(i));
      if (window !== undefined) {
        const conv = layer.conv;
        g.output(window, `next_window${i}`, 'float32', ['rows', conv.width - 1, conv.inChannels]);
      }
      const attended = convs2sAttendStepOnnx(g, layer.attention, `${prefix}/attention`, y, target, memory);
      x = g.op('Mul', [g.op('Add', [attended, residual]), g.constFloat(HALF)]);
    });
    const f = gemmOnnx(g, this.decOut, 'decoder/out', x);
    const logits = g.scope('head', () => this.head.toOnnx(g, f, { embedding, storeFrozen }));
    emitStepLogProbs(g, logits, V);
    g.output(g.op('Add', [position, g.constInt64(1)]), 'next_position', 'int64', ['rows']);
    return g;
  }
}

function linearOnnx(g: GraphBuilder, w: Linear, name: string, x: string): string {
  return g.op('Add', [
    g.op('MatMul', [x, g.initializer(`${name}/W`, tensorValue(w.W))]),
    g.initializer(`${name}/b`, tensorValue(w.b)),
  ]);
}

function gemmOnnx(g: GraphBuilder, w: Linear, name: string, x: string): string {
  return g.op('Gemm', [x, g.initializer(`${name}/W`, tensorValue(w.W)), g.initializer(`${name}/b`, tensorValue(w.b))]);
}

registerArch<Convs2sConfig>({
  name: 'convs2s',
  summary: 'ConvS2S (Gehring et al. 2017): GLU convolution stacks, multi-step attention, incremental decoder',
  tasks: ['translation'],
  inputKind: 'tokens',
  presets,
  settings,
  // Without fairseq's weight normalisation, a clip of 5 let the toy runs swing (82 BLEU); 1 reaches 94.
  recipe: { clipNorm: 1 },
  build: (config, sizes, head, seed) => {
    if (sizes.srcVocab === undefined) throw new TypeError('convs2s needs a source vocabulary size (sizes.srcVocab)');
    return new Convs2sModel(config, { ...sizes, srcVocab: sizes.srcVocab }, head, seed);
  },
});
