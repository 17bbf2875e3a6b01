import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import type { ParamStore } from '../params.ts';
import { fusedMode, runFused } from './fused.ts';

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

/**
 * Layer norm as one fused op with its own gradient (models/layers/fused.ts): autodiff through moments, rsqrt and
 * the affine map records ≈ 10 forward and ≈ 25 backward kernels, each a pass over [rows, d]. Kernel contract:
 *
 *   FrostLayerNorm      inputs x [..., d], gamma [d], beta [d]; attr epsilon
 *                       outputs y = x̂·γ + β (x's shape), x̂ = (x − mean)·r (x's shape), r = 1/√(var + ε) [rows]
 *                       (mean and the biased variance over the last axis, rows = x.size / d)
 *   FrostLayerNormGrad  inputs dy (x's shape), unit x̂, rstd r, gamma
 *                       outputs dx = r·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·γ (per row), dγ = Σ_rows dy·x̂,
 *                       dβ = Σ_rows dy
 *
 * frost's wasm kernels (train/backend/kernels/layer-norm.ts) do each in two passes over the heap; elsewhere the
 * same contract runs as tfjs ops; with fused mode 'unfused' the plain op graph runs (what the tests compare to).
 */
export const LAYER_NORM_KERNEL = 'FrostLayerNorm';
export const LAYER_NORM_GRAD_KERNEL = 'FrostLayerNormGrad';

function layerNormUnfused<T extends tf.Tensor>(w: LayerNormWeights, x: T): T {
  return tf.tidy(() => {
    const { mean, variance } = tf.moments(x, -1, true);
    const unit = tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, LAYER_NORM_EPS)));
    return tf.add(tf.mul(unit, w.gamma), w.beta) as T;
  });
}

export function layerNormOps(x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, epsilon: number): tf.Tensor[] {
  const { mean, variance } = tf.moments(x, -1, true);
  const rstd = tf.rsqrt(tf.add(variance, epsilon));
  const unit = tf.mul(tf.sub(x, mean), rstd);
  return [tf.add(tf.mul(unit, gamma), beta), unit, tf.reshape(rstd, [-1])];
}

export function layerNormGradOps(dy: tf.Tensor, unit: tf.Tensor, rstd: tf.Tensor, gamma: tf.Tensor): tf.Tensor[] {
  const d = gamma.shape[0];
  const rows = unit.size / d;
  const g = tf.mul(dy, gamma);
  const centred = tf.sub(tf.sub(g, tf.mean(g, -1, true)), tf.mul(unit, tf.mean(tf.mul(g, unit), -1, true)));
  const dx = tf.mul(centred, tf.reshape(rstd, [...unit.shape.slice(0, -1), 1]));
  const dGamma = tf.sum(tf.reshape(tf.mul(dy, unit), [rows, d]), 0);
  const dBeta = tf.sum(tf.reshape(dy, [rows, d]), 0);
  return [dx, dGamma, dBeta];
}

export function layerNorm<T extends tf.Tensor>(w: LayerNormWeights, x: T): T {
  if (fusedMode() === 'unfused') return layerNormUnfused(w, x);
  const attrs = { epsilon: LAYER_NORM_EPS };
  const fn = tf.customGrad(((xs: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, save: tf.GradSaveFunc) => {
    const [y, unit, rstd] = runFused(
      LAYER_NORM_KERNEL,
      { x: xs, gamma, beta },
      () => layerNormOps(xs, gamma, beta, LAYER_NORM_EPS),
      attrs,
    );
    save([unit, rstd, gamma]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, [u, r, g]: tf.Tensor[]) =>
        runFused(LAYER_NORM_GRAD_KERNEL, { dy, unit: u, rstd: r, gamma: g }, () => layerNormGradOps(dy, u, r, g)),
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]);
  return fn(x, w.gamma, w.beta) as T;
}

/**
 * The same in ONNX: opset 17's LayerNormalization (one kernel instead of nine nodes, each of which costs onnxruntime
 * its per-node overhead in every decoder step), or before opset 17 the same as ops (ReduceMean, Sub, Mul, Sqrt,
 * Div). The kernel sums in another order than the ops, so an int8-compute export's tokens can differ from one built
 * with the ops; float32 tokens were the same on the bench model and in the export tests.
 */
export function layerNormOnnx(g: GraphBuilder, w: LayerNormWeights, x: string): string {
  const gamma = g.initializer(`${w.name}/gamma`, tensorValue(w.gamma));
  const beta = g.initializer(`${w.name}/beta`, tensorValue(w.beta));
  if (g.opset >= 17) return g.op('LayerNormalization', [x, gamma, beta], { axis: -1, epsilon: LAYER_NORM_EPS });
  const mean = g.reduce('ReduceMean', x, [-1], true);
  const centred = g.op('Sub', [x, mean]);
  const variance = g.reduce('ReduceMean', g.op('Mul', [centred, centred]), [-1], true);
  const unit = g.op('Div', [centred, g.op('Sqrt', [g.op('Add', [variance, g.constFloat(LAYER_NORM_EPS)])])]);
  return g.op('Add', [g.op('Mul', [unit, gamma]), beta]);
}
