import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import type { ParamStore } from '../params.ts';
import { addBiasOver } from './bias-add.ts';

/** ReLU; GELU (exact erf form); swish = SiLU, x·σ(x) (Marian's and Hugging Face's `swish`). */
export type FeedForwardActivation = 'relu' | 'gelu' | 'swish';

/** The Transformer's position-wise feed-forward block: act(x W1 + b1) W2 + b2, over the last axis. */
export interface FeedForwardWeights {
  name: string;
  activation: FeedForwardActivation;
  W1: tf.Variable;
  b1: tf.Variable;
  W2: tf.Variable;
  b2: tf.Variable;
}

export function createFeedForward(
  p: ParamStore,
  name: string,
  d: number,
  inner: number,
  activation: FeedForwardActivation,
): FeedForwardWeights {
  return {
    name,
    activation,
    W1: p.variable(`${name}/W1`, [d, inner], { kind: 'glorot-uniform' }),
    b1: p.variable(`${name}/b1`, [inner], { kind: 'zeros' }),
    W2: p.variable(`${name}/W2`, [inner, d], { kind: 'glorot-uniform' }),
    b2: p.variable(`${name}/b2`, [d], { kind: 'zeros' }),
  };
}

/** x [..., d] times W [d, out] plus b, flattening the leading axes for one 2-D GEMM (b added over the product). */
export function dense(x: tf.Tensor, W: tf.Tensor, b: tf.Tensor): tf.Tensor {
  const shape = x.shape;
  const rows = x.size / shape[shape.length - 1];
  const y = addBiasOver(tf.matMul(tf.reshape(x, [rows, shape[shape.length - 1]]) as tf.Tensor2D, W as tf.Tensor2D), b);
  return tf.reshape(y, [...shape.slice(0, -1), W.shape[1] as number]);
}

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/**
 * max(x, 0) whose gradient reads its output (y > 0 where x > 0), not its input: the output is what the next
 * product keeps anyway, so a training step holds one [rows, inner] tensor per feed-forward block, not two.
 */
const relu = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  const y = tf.relu(x);
  save([y]);
  return { value: y, gradFunc: (dy: tf.Tensor, [kept]: tf.Tensor[]) => tf.mul(dy, tf.step(kept!)) };
}) as unknown as CustomGradFn) as (x: tf.Tensor) => tf.Tensor;

/** GELU with the exact (erf) form, 0.5 x (1 + erf(x / √2)), as PyTorch's default. */
function gelu(x: tf.Tensor): tf.Tensor {
  return tf.mul(tf.mul(x, 0.5), tf.add(tf.erf(tf.mul(x, Math.SQRT1_2)), 1));
}

/** swish(x) = SiLU(x) = x · σ(x), as PyTorch's nn.SiLU and Marian's `swish`. */
function swish(x: tf.Tensor): tf.Tensor {
  return tf.mul(x, tf.sigmoid(x));
}

const ACTIVATIONS: Readonly<Record<FeedForwardActivation, (x: tf.Tensor) => tf.Tensor>> = { relu, gelu, swish };

/** `dropout` applies to the hidden activations while training (fairseq's activation dropout). */
export function feedForward<T extends tf.Tensor>(w: FeedForwardWeights, x: T, dropout: (h: tf.Tensor) => tf.Tensor): T {
  return tf.tidy(() => {
    const pre = dense(x, w.W1, w.b1);
    const h = ACTIVATIONS[w.activation](pre);
    return dense(dropout(h), w.W2, w.b2) as T;
  });
}

export function feedForwardOnnx(g: GraphBuilder, w: FeedForwardWeights, x: string): string {
  const pre = g.op('Add', [
    g.op('MatMul', [x, g.initializer(`${w.name}/W1`, tensorValue(w.W1))]),
    g.initializer(`${w.name}/b1`, tensorValue(w.b1)),
  ]);
  let h: string;
  if (w.activation === 'gelu') {
    // 0.5 x (1 + erf(x / √2)); opset 18 has no Gelu op, and onnxruntime fuses this pattern into its own.
    const erf = g.op('Erf', [g.op('Mul', [pre, g.constFloat(Math.SQRT1_2)])]);
    h = g.op('Mul', [g.op('Mul', [pre, g.constFloat(0.5)]), g.op('Add', [erf, g.constFloat(1)])]);
  } else if (w.activation === 'swish') {
    // x · σ(x); opset 18 has no Swish/SiLU op, and onnxruntime fuses Sigmoid + Mul into its QuickGelu-like kernel.
    h = g.op('Mul', [pre, g.op('Sigmoid', [pre])]);
  } else {
    h = g.op('Relu', [pre]);
  }
  return g.op('Add', [
    g.op('MatMul', [h, g.initializer(`${w.name}/W2`, tensorValue(w.W2))]),
    g.initializer(`${w.name}/b2`, tensorValue(w.b2)),
  ]);
}
