import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import type { ParamStore } from '../params.ts';
import { zeroWindowOnnx } from './dynamic-conv-onnx.ts';

/**
 * One ConvS2S convolution block's convolution and gated linear unit (Gehring et al. 2017, §3.2):
 *   z = conv_k(x) ∈ R^{2C'},  y = GLU(z) = z[:C'] ⊙ σ(z[C':])
 * over a sequence x [B, T, C]. The encoder pads (k−1)/2 on each side (k odd); the decoder pads k−1
 * on the left only, so output t sees inputs t−k+1..t and never a later one.
 *
 * The convolution is an im2col MatMul: the k shifted copies of x are stacked along channels,
 * [B, T, k·C], and multiplied by W [k·C, 2C'] (row j·C + c is tap j, channel c). Training then runs
 * through tfjs's pad/slice/concat and the project's GEMM path, whose gradients are all plain; and
 * the incremental decoder's step is the same MatMul on Concat(window, x), where the window holds the
 * last k−1 inputs: a step costs the same at any position.
 *
 * No weight normalisation (fairseq's fconv has it): the weights start from fairseq's
 * initialisation, N(0, 4(1−p)/(k·C)) (here the uniform law of that variance), which is what keeps
 * the GLU stack's activations at unit scale; tests and the toy corpus train without it.
 */
export interface Convs2sConv {
  /** [k·C, 2C'] */ W: tf.Variable;
  /** [2C'] */ b: tf.Variable;
  readonly width: number;
  readonly inChannels: number;
  readonly outChannels: number;
}

export function createConvs2sConv(
  params: ParamStore,
  prefix: string,
  width: number,
  inChannels: number,
  outChannels: number,
  dropout: number,
): Convs2sConv {
  const limit = Math.sqrt((12 * (1 - dropout)) / (width * inChannels));
  return {
    W: params.variable(`${prefix}/W`, [width * inChannels, 2 * outChannels], { kind: 'uniform', limit }),
    b: params.variable(`${prefix}/b`, [2 * outChannels], { kind: 'zeros' }),
    width,
    inChannels,
    outChannels,
  };
}

/** GLU over the last axis: a ⊙ σ(b) for z = [a; b]. */
export function convs2sGlu<T extends tf.Tensor>(z: T): T {
  const [a, b] = tf.split(z, 2, z.rank - 1);
  return tf.mul(a, tf.sigmoid(b)) as T;
}

/** y = GLU(conv(x)) for x [B, T, C]: 'causal' pads k−1 on the left, 'centered' (k−1)/2 each side. */
export function convs2sConv(w: Convs2sConv, x: tf.Tensor3D, padding: 'causal' | 'centered'): tf.Tensor3D {
  const [B, T, C] = x.shape;
  const k = w.width;
  const left = padding === 'causal' ? k - 1 : (k - 1) / 2;
  const right = k - 1 - left;
  let cols: tf.Tensor3D = x;
  if (k > 1) {
    const padded = tf.pad(x, [
      [0, 0],
      [left, right],
      [0, 0],
    ]);
    const taps = Array.from({ length: k }, (_, j) => tf.slice(padded, [0, j, 0], [B, T, C]));
    cols = tf.concat(taps, 2) as tf.Tensor3D;
  }
  const z = tf.add(tf.matMul(tf.reshape(cols, [B * T, k * C]), w.W), w.b);
  return tf.reshape(convs2sGlu(z), [B, T, w.outChannels]);
}

/**
 * One causal step: x [N, C] with the last k−1 inputs `window` [N, k−1, C] (absent for k = 1) →
 * y [N, C'] and the window for the next step (the last k−1 of window ++ x).
 */
export function convs2sConvStep(
  w: Convs2sConv,
  x: tf.Tensor2D,
  window?: tf.Tensor3D,
): { y: tf.Tensor2D; window?: tf.Tensor3D } {
  const k = w.width;
  const N = x.shape[0];
  if (k === 1) return { y: convs2sGlu(tf.add(tf.matMul(x, w.W), w.b) as tf.Tensor2D) };
  if (!window) throw new Error(`convs2s: a width-${k} convolution step needs its window of ${k - 1} inputs`);
  const all = tf.concat([window, tf.expandDims(x, 1)], 1) as tf.Tensor3D;
  const y = convs2sGlu(tf.add(tf.matMul(tf.reshape(all, [N, k * w.inChannels]), w.W), w.b) as tf.Tensor2D);
  return { y, window: tf.slice(all, [0, 1, 0], [N, k - 1, w.inChannels]) };
}

/** ONNX of {@link convs2sConv} ('centered', the encoder's) on x [B, T, C]; weights under `prefix`. */
export function convs2sConvOnnx(g: GraphBuilder, w: Convs2sConv, prefix: string, x: string): string {
  const k = w.width;
  if (k % 2 === 0) throw new Error(`convs2s: an encoder convolution needs an odd width, got ${k}`);
  let cols = x;
  if (k > 1) {
    const half = (k - 1) / 2;
    const padded = g.op('Pad', [x, g.constInt64([0, half, 0, 0, half, 0])]);
    // Tap j is padded[:, j : j + T]: its end counted back from the padded length (T + k − 1).
    const taps = Array.from({ length: k }, (_, j) =>
      g.slice(padded, [j], [j === k - 1 ? Number.MAX_SAFE_INTEGER : j - (k - 1)], [1]),
    );
    cols = g.op('Concat', taps, { axis: 2 });
  }
  return gluOnnx(g, g.op('Add', [g.op('MatMul', [cols, weight(g, w, prefix)]), bias(g, w, prefix)]), w.outChannels);
}

/**
 * ONNX of {@link convs2sConvStep}: x [N, C] and window [N, k−1, C] → y [N, C'] and the next window
 * (absent for k = 1).
 */
export function convs2sConvStepOnnx(
  g: GraphBuilder,
  w: Convs2sConv,
  prefix: string,
  x: string,
  window?: string,
): { y: string; window?: string } {
  const k = w.width;
  const gemm = (input: string) => g.op('Gemm', [input, weight(g, w, prefix), bias(g, w, prefix)]);
  if (k === 1) return { y: gluOnnx(g, gemm(x), w.outChannels) };
  if (window === undefined) throw new Error(`convs2s: a width-${k} convolution step needs its window input`);
  const all = g.op('Concat', [window, g.unsqueeze(x, [1])], { axis: 1 });
  const flat = g.op('Reshape', [all, g.constInt64([0, k * w.inChannels])]);
  return { y: gluOnnx(g, gemm(flat), w.outChannels), window: g.slice(all, [1], [Number.MAX_SAFE_INTEGER], [1]) };
}

/**
 * ONNX: the decoder's initial window, zeros [B, k−1, C] for a batch of B (the causal padding), as
 * the encoder graph emits it; `batch` names a 1-D int64 [B].
 */
export function convs2sZeroWindowOnnx(g: GraphBuilder, w: Convs2sConv, batch: string): string {
  return zeroWindowOnnx(g, batch, w.width - 1, w.inChannels);
}

function gluOnnx(g: GraphBuilder, z: string, channels: number): string {
  const [a, b] = g.split(z, -1, [channels, channels]);
  return g.op('Mul', [a!, g.op('Sigmoid', [b!])]);
}

function weight(g: GraphBuilder, w: Convs2sConv, prefix: string): string {
  return g.initializer(`${prefix}/W`, tensorValue(w.W));
}

function bias(g: GraphBuilder, w: Convs2sConv, prefix: string): string {
  return g.initializer(`${prefix}/b`, tensorValue(w.b));
}
