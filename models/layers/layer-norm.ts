import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import type { ParamStore } from '../params.ts';

/** ε inside the square root, as PyTorch's nn.LayerNorm and fairseq use. */
export const LAYER_NORM_EPS = 1e-5;

/** Layer normalisation over the last axis (Ba et al.): (x − mean) / √(var + ε) · γ + β. */
export interface LayerNormWeights {
  name: string;
  gamma: tf.Variable;
  beta: tf.Variable;
}

export function createLayerNorm(p: ParamStore, name: string, d: number): LayerNormWeights {
  return {
    name,
    gamma: p.variable(`${name}/gamma`, [d], { kind: 'constant', value: 1 }),
    beta: p.variable(`${name}/beta`, [d], { kind: 'zeros' }),
  };
}

export function layerNorm<T extends tf.Tensor>(w: LayerNormWeights, x: T): T {
  return tf.tidy(() => {
    const { mean, variance } = tf.moments(x, -1, true);
    const unit = tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, LAYER_NORM_EPS)));
    return tf.add(tf.mul(unit, w.gamma), w.beta) as T;
  });
}

/**
 * The same as ONNX ops (ReduceMean, Sub, Mul, Sqrt, Div). Written out rather than opset 17's
 * LayerNormalization, which older runtimes and the precision passes do not all know; onnxruntime
 * fuses this pattern back into its LayerNormalization kernel when it optimises the graph.
 */
export function layerNormOnnx(g: GraphBuilder, w: LayerNormWeights, x: string): string {
  const mean = g.reduce('ReduceMean', x, [-1], true);
  const centred = g.op('Sub', [x, mean]);
  const variance = g.reduce('ReduceMean', g.op('Mul', [centred, centred]), [-1], true);
  const unit = g.op('Div', [centred, g.op('Sqrt', [g.op('Add', [variance, g.constFloat(LAYER_NORM_EPS)])])]);
  return g.op('Add', [
    g.op('Mul', [unit, g.initializer(`${w.name}/gamma`, tensorValue(w.gamma))]),
    g.initializer(`${w.name}/beta`, tensorValue(w.beta)),
  ]);
}
