/**
 * The fused layer norm (models/layers/layer-norm.ts) against what it replaces:
 *  - the wasm kernels (train/backend/kernels/layer-norm.ts) against their tfjs-ops contract, forward and backward;
 *  - values and gradients (x, γ, β) of layerNorm with the wasm kernels and with the tfjs-ops fallback against plain
 *    autodiff through the unfused graph, on 3-D inputs whose width is and is not a multiple of 4;
 *  - a whole Transformer loss (post-norm small shapes): value and every parameter's gradient, fused vs unfused.
 */
import '@tensorflow/tfjs';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { setFusedMode, type FusedMode } from '../models/layers/fused.ts';
import {
  LAYER_NORM_GRAD_KERNEL,
  LAYER_NORM_KERNEL,
  layerNorm,
  layerNormGradOps,
  layerNormOps,
  type LayerNormWeights,
} from '../models/layers/layer-norm.ts';
import { initBackend } from '../train/backend/select.ts';

await initBackend({ prefer: 'wasm', quiet: true });
assert.equal(tf.getBackend(), 'wasm');

let seed = 4242;
function rand(): number {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
}
function randTensor(shape: number[], scale = 1, offset = 0): tf.Tensor {
  const n = shape.reduce((p, x) => p * x, 1);
  return tf.tensor(
    Float32Array.from({ length: n }, () => offset + (rand() * 2 - 1) * scale),
    shape,
  );
}

function maxDiff(a: tf.Tensor, b: tf.Tensor): number {
  assert.deepEqual(a.shape, b.shape);
  const x = a.dataSync();
  const y = b.dataSync();
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
  return worst;
}

function withMode<T>(mode: FusedMode, fn: () => T): T {
  const previous = setFusedMode(mode);
  try {
    return fn();
  } finally {
    setFusedMode(previous);
  }
}

const SHAPES = [
  [3, 5, 24],
  [2, 7, 10],
  [1, 1, 3],
];

test('layer norm kernels equal their tfjs-ops contract, forward and backward', () => {
  for (const shape of SHAPES) {
    const d = shape[2];
    tf.tidy(() => {
      const x = randTensor(shape, 3, 0.5);
      const gamma = randTensor([d], 1, 1);
      const beta = randTensor([d]);
      const dy = randTensor(shape);
      const viaKernel = tf.engine().runKernel(LAYER_NORM_KERNEL, { x, gamma, beta }, { epsilon: 1e-5 }) as tf.Tensor[];
      const viaOps = layerNormOps(x, gamma, beta, 1e-5);
      assert.equal(viaKernel.length, 3);
      viaKernel.forEach((t, i) => assert.ok(maxDiff(t, viaOps[i]) < 2e-5, `forward output ${i} of ${shape}`));
      const [, unit, rstd] = viaOps;
      const grads = tf.engine().runKernel(LAYER_NORM_GRAD_KERNEL, { dy, unit, rstd, gamma }, {}) as tf.Tensor[];
      const gradOps = layerNormGradOps(dy, unit, rstd, gamma);
      grads.forEach((t, i) => assert.ok(maxDiff(t, gradOps[i]) < 5e-5, `gradient ${i} of ${shape}`));
    });
  }
});

test('layerNorm: values and gradients (x, γ, β), wasm kernels and tfjs ops, equal plain autodiff', () => {
  for (const shape of SHAPES) {
    const d = shape[2];
    const w: LayerNormWeights = {
      name: 'ln',
      gamma: tf.variable(randTensor([d], 1, 1)),
      beta: tf.variable(randTensor([d])),
    };
    const x = randTensor(shape, 2, -0.3);
    const upstream = randTensor(shape);
    const run = (mode: FusedMode) =>
      withMode(mode, () => {
        const f = (xs: tf.Tensor, g: tf.Tensor, b: tf.Tensor) =>
          tf.sum(tf.mul(layerNorm({ name: 'ln', gamma: g as tf.Variable, beta: b as tf.Variable }, xs), upstream));
        const { value, grads } = tf.valueAndGrads(f)([x, w.gamma, w.beta]);
        return { value, grads };
      });
    const ref = run('unfused');
    for (const mode of ['auto', 'ops'] as const) {
      const got = run(mode);
      assert.ok(Math.abs(got.value.dataSync()[0] - ref.value.dataSync()[0]) < 1e-4, `${mode} value ${shape}`);
      got.grads.forEach((g, i) => assert.ok(maxDiff(g, ref.grads[i]) < 5e-5, `${mode} gradient ${i} of ${shape}`));
      tf.dispose([got.value, ...got.grads]);
    }
    tf.dispose([ref.value, ...ref.grads, x, upstream, w.gamma, w.beta]);
  }
});

test('a post-norm Transformer loss: the value and every gradient equal the unfused graph', () => {
  const cfg = { ...resolveArchConfig('transformer', 'tiny'), norm: 'post' };
  const model = buildModel(
    'transformer',
    cfg,
    { srcVocab: 30, tgtVocab: 30, jointEmbedding: true },
    { name: 'shared-l2' },
    3,
  );
  const B = 3;
  const S = 6;
  const T = 5;
  const ids = (n: number) => Int32Array.from({ length: n }, () => 1 + Math.floor(rand() * 29));
  const tgtMask = Float32Array.from({ length: B * T }, (_, i) => (i % T < T - (i % 2) ? 1 : 0));
  const batch = {
    kind: 'tokens' as const,
    src: ids(B * S),
    srcLen: Int32Array.from([6, 4, 5]),
    tgtIn: ids(B * T),
    tgtOut: ids(B * T),
    tgtMask,
    B,
    S,
    T,
    tokens: tgtMask.reduce((a, b) => a + b, 0),
    indices: new Int32Array(0),
  };
  const vars = [...model.params.learnable.values()];
  const run = (mode: FusedMode) =>
    withMode(mode, () => tf.variableGrads(() => model.lossSum(batch, false) as tf.Scalar, vars));
  const ref = run('unfused');
  const got = run('auto');
  assert.ok(Math.abs(got.value.dataSync()[0] - ref.value.dataSync()[0]) < 1e-3 * Math.abs(ref.value.dataSync()[0]));
  const names = Object.keys(ref.grads);
  assert.ok(
    names.some((n) => n.includes('ln')),
    'the model has layer norms',
  );
  for (const name of names) assert.ok(maxDiff(got.grads[name], ref.grads[name]) < 1e-4, name);
  tf.dispose([ref.value, got.value, ...Object.values(ref.grads), ...Object.values(got.grads)]);
  model.params.dispose();
});
