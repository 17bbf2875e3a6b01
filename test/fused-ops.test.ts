/**
 * The fused recurrent ops (models/layers/fused.ts) against what they replace:
 *  - each wasm kernel (GRU cell, additive attention, dropout, the loss's gradient, Adam) against its
 *    tfjs-ops contract, forward and backward, over shapes whose widths are and are not multiples of 4
 *    (the SIMD tail);
 *  - the ops' values and gradients (wasm kernels, and the tfjs-ops fallback on the cpu backend)
 *    against plain autodiff through the unfused graph;
 *  - a whole rnn-attn loss: values and every parameter's gradient, fused vs unfused;
 *  - the kernels on the threaded wasm build (a shared heap).
 * Random inputs come from core/random.
 */
import '@tensorflow/tfjs';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import {
  ATTENTION_GRAD_KERNEL,
  ATTENTION_KERNEL,
  attentionGradOps,
  attentionOps,
  attentionSteps,
  type AttentionWeights,
} from '../models/layers/attention.ts';
import { dropoutOps, dropoutScale, DROPOUT_KERNEL, seededDropout } from '../models/layers/dropout.ts';
import { type FusedMode } from '../models/layers/fused.ts';
import {
  GRU_CELL_GRAD_KERNEL,
  GRU_CELL_KERNEL,
  gruCellGradOps,
  gruCellOps,
  gruStepWith,
  type GruWeights,
} from '../models/layers/gru.ts';
import { sharedWeightMatMul } from '../models/layers/shared-matmul.ts';
import {
  SOFTMAX_XENT_GRAD_KERNEL,
  SOFTMAX_XENT_KERNEL,
  softmaxCrossEntropyGradOps,
  softmaxCrossEntropyOps,
} from '../models/loss.ts';
import { initBackend } from '../train/backend/select.ts';
import { ADAM_KERNEL, adamUpdateOps, SUM_SQUARES_KERNEL } from '../train/optim/adam.ts';
import { MOVING_AVERAGE_KERNEL, movingAverageOps } from '../train/optim/parameter-average.ts';
import { makeBatch, planBatches } from '../train/data/batches.ts';
import { runScriptInChild } from './helpers/child-script.ts';
import { lossRows } from './helpers/loss-rows.ts';
import { uniformTensors } from './helpers/random-tensors.ts';
import { scaledDiff, withMode } from './helpers/tensor-compare.ts';
import { toyWordPairs } from './helpers/toy-pairs.ts';

await initBackend({ prefer: 'wasm', quiet: true });

/** Uniform in [−scale, scale), a fresh core/random stream per call. */
const rand = uniformTensors(2024, 'fused');

function runKernel(name: string, inputs: tf.NamedTensorMap, attrs: tf.NamedAttrMap = {}): tf.Tensor[] {
  return tf.engine().runKernel(name, inputs, attrs) as unknown as tf.Tensor[];
}

function withBackend<T>(name: string, fn: () => T): T {
  const previous = tf.getBackend();
  void tf.setBackend(name); // cpu and wasm are registered and initialised already, so the switch is synchronous
  try {
    return fn();
  } finally {
    void tf.setBackend(previous);
  }
}

const mask01 = (rows: number, ones: number[]) =>
  tf.tensor2d(
    Array.from({ length: rows }, (_, i) => (ones.includes(i) ? 1 : 0)),
    [rows, 1],
  );

test('GRU cell kernel equals its tfjs-ops contract, forward and backward', () => {
  for (const [B, H] of [
    [3, 7],
    [5, 8],
    [2, 1],
    [64, 256],
  ]) {
    for (const two of [false, true]) {
      for (const masked of [false, true]) {
        tf.tidy(() => {
          const inputs: tf.NamedTensorMap = {
            gx: rand([B, 3 * H], 3),
            hw: rand([B, 3 * H], 2),
            bh: rand([3 * H]),
            h: rand([B, H]),
          };
          if (two) inputs.gx2 = rand([B, 3 * H]);
          if (masked) inputs.mask = mask01(B, [0, 2]);
          const got = runKernel(GRU_CELL_KERNEL, inputs);
          const want = gruCellOps(inputs);
          const label = `B=${B} H=${H} gx2=${two} mask=${masked}`;
          // tanh/σ through one exp polynomial vs tfjs's kernels: a few float32 ulps of values ≤ 1.
          got.forEach((t, i) => assert.ok(scaledDiff(t, want[i]) < 1e-6, `${label}: forward output ${i}`));
          const gradInputs: tf.NamedTensorMap = { dhNext: rand([B, H]), cache: want[1], h: inputs.h };
          if (masked) gradInputs.mask = inputs.mask;
          const gotGrad = runKernel(GRU_CELL_GRAD_KERNEL, gradInputs);
          const wantGrad = gruCellGradOps(gradInputs);
          gotGrad.forEach((t, i) => assert.ok(scaledDiff(t, wantGrad[i]) < 1e-6, `${label}: gradient output ${i}`));
        });
      }
    }
  }
});

test('attention kernel equals its tfjs-ops contract, forward and backward', () => {
  for (const [B, S, att, A] of [
    [3, 5, 7, 6],
    [2, 1, 4, 4],
    [4, 9, 13, 3],
    [16, 18, 64, 48],
  ]) {
    for (const biased of [false, true]) {
      for (const accumulate of [false, true]) {
        tf.tidy(() => {
          const inputs: tf.NamedTensorMap = {
            q: rand([B, att], 2),
            keys: rand([B, S, att], 2),
            v: rand([att]),
            annotations: rand([B, S, A]),
          };
          // −1e9 on the last position of every other row (as padding is scored).
          if (biased)
            inputs.scoreBias = tf.tensor2d(
              Array.from({ length: B * S }, (_, i) => (i % S === S - 1 && (i / S) % 2 < 1 && S > 1 ? -1e9 : 0)),
              [B, S],
            );
          const got = runKernel(ATTENTION_KERNEL, inputs);
          const want = attentionOps(inputs);
          const label = `B=${B} S=${S} att=${att} A=${A} bias=${biased} acc=${accumulate}`;
          got.forEach((t, i) => assert.ok(scaledDiff(t, want[i]) < 1e-5, `${label}: forward output ${i}`));
          const gradInputs: tf.NamedTensorMap = {
            dContext: rand([B, A]),
            annotations: inputs.annotations,
            alpha: want[2],
            energy: want[1],
            v: inputs.v,
          };
          if (accumulate) Object.assign(gradInputs, { dKeys: rand([B, S, att]), dV: rand([att]) });
          const gotGrad = runKernel(ATTENTION_GRAD_KERNEL, gradInputs);
          const wantGrad = attentionGradOps(gradInputs);
          gotGrad.forEach((t, i) => assert.ok(scaledDiff(t, wantGrad[i]) < 1e-5, `${label}: gradient output ${i}`));
        });
      }
    }
  }
});

test('attention over the first rows of the annotations (a decoder that dropped finished sentences)', () => {
  for (const [B, n, S, att, A] of [
    [5, 3, 4, 7, 6],
    [16, 9, 18, 64, 48],
    [2, 1, 1, 4, 4],
  ]) {
    for (const accumulate of [false, true]) {
      tf.tidy(() => {
        const full: tf.NamedTensorMap = {
          keys: rand([B, S, att], 2),
          v: rand([att]),
          annotations: rand([B, S, A]),
          scoreBias: tf.mul(rand([B, S]), 3),
        };
        const q = rand([n, att], 2);
        const head = (x: tf.Tensor) => tf.slice(x, 0, n);
        const label = `B=${B} n=${n} acc=${accumulate}`;
        // Reference: the same attention on the first n rows cut out by hand.
        const cut = {
          q,
          keys: head(full.keys),
          v: full.v,
          annotations: head(full.annotations),
          scoreBias: head(full.scoreBias),
        };
        const want = attentionOps(cut);
        for (const got of [runKernel(ATTENTION_KERNEL, { ...full, q }), attentionOps({ ...full, q })]) {
          got.forEach((t, i) => assert.ok(scaledDiff(t, want[i]) < 1e-5, `${label}: forward output ${i}`));
        }
        const step = { dContext: rand([n, A]), alpha: want[2], energy: want[1], v: full.v };
        const sums: tf.NamedTensorMap = accumulate ? { dKeys: rand([B, S, att]), dV: rand([att]) } : {};
        const [dq, dkCut, dv] = attentionGradOps({
          ...step,
          annotations: cut.annotations,
          ...(accumulate ? { dKeys: head(sums.dKeys), dV: sums.dV } : {}),
        });
        const rest = accumulate ? tf.slice(sums.dKeys, n) : tf.zeros([B - n, S, att]);
        const wantGrad = [dq, tf.concat([dkCut, rest], 0), dv];
        for (const got of [
          runKernel(ATTENTION_GRAD_KERNEL, { ...step, annotations: full.annotations, ...sums }),
          attentionGradOps({ ...step, annotations: full.annotations, ...sums }),
        ]) {
          got.forEach((t, i) => assert.ok(scaledDiff(t, wantGrad[i]) < 1e-5, `${label}: gradient output ${i}`));
        }
      });
    }
  }
  tf.tidy(() => {
    const q = rand([3, 4]);
    assert.throws(
      () => runKernel(ATTENTION_KERNEL, { q, keys: rand([2, 5, 4]), v: rand([4]), annotations: rand([2, 5, 3]) }),
      /3 query rows for 2 annotation rows/,
    );
  });
});

test('dropout kernel makes the JS mask bit for bit; the gradient is dy ⊙ mask', () => {
  for (const [shape, rate, seed] of [
    [[3, 5], 0.2, 1],
    [[37, 64], 0.2, 0xdeadbeef],
    [[7], 0.5, 42],
    [[4, 4], 0.999, 3],
  ] as const) {
    tf.tidy(() => {
      const x = rand([...shape]);
      const [y, mask] = runKernel(DROPOUT_KERNEL, { x }, { seed, rate });
      const [y2, mask2] = dropoutOps(x, seed >>> 0, rate);
      assert.deepEqual(mask.dataSync(), mask2.dataSync(), `mask ${shape} rate ${rate}`);
      assert.deepEqual(y.dataSync(), y2.dataSync());
      const kept = [...mask.dataSync()].filter((m) => m !== 0);
      assert.ok(kept.every((m) => m === dropoutScale(rate)));
      const dy = rand([...shape]);
      const dx = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(seededDropout(t, rate, seed), dy)))(x);
      assert.deepEqual(dx.dataSync(), tf.mul(dy, mask).dataSync());
    });
  }
  const x = tf.ones([1000]);
  const kept = tf.sum(tf.cast(tf.greater(seededDropout(x, 0.3, 9), 0), 'float32')).dataSync()[0];
  assert.ok(kept > 630 && kept < 770, `kept ${kept} of 1000 at rate 0.3`);
  assert.equal(seededDropout(x, 0, 9), x);
  assert.throws(() => seededDropout(x, 1, 9), RangeError);
});

test('loss gradient kernel equals its tfjs-ops contract', () => {
  for (const [N, V] of [
    [5, 7],
    [9, 64],
    [3, 2],
  ]) {
    tf.tidy(() => {
      const probs = tf.softmax(rand([N, V], 6));
      const rows = lossRows(N, V);
      const targets = tf.tensor1d(rows.targets, 'int32');
      const mask = tf.tensor1d(rows.mask, 'float32');
      const inputs = { probs, targets, mask, dy: tf.scalar(0.37) };
      const [got] = runKernel(SOFTMAX_XENT_GRAD_KERNEL, inputs);
      const [want] = softmaxCrossEntropyGradOps(inputs);
      assert.ok(scaledDiff(got, want) < 1e-7, `N=${N} V=${V}`);
    });
  }
});

/** Σ_i mask_i (logsumexp(z_i) − z_i[y_i]) in float64. */
function refLoss(z: Float32Array, y: ArrayLike<number>, mask: ArrayLike<number>, N: number, V: number): number {
  let total = 0;
  for (let i = 0; i < N; i++) {
    let max = -Infinity;
    for (let j = 0; j < V; j++) max = Math.max(max, z[i * V + j]);
    let sum = 0;
    for (let j = 0; j < V; j++) sum += Math.exp(z[i * V + j] - max);
    total += mask[i] * (max + Math.log(sum) - z[i * V + y[i]]);
  }
  return total;
}

test('loss forward kernel: probabilities as the ops, value as float64 logsumexp, also where p[y] underflows', () => {
  for (const [N, V, scale] of [
    [5, 7, 6],
    [9, 64, 6],
    [3, 2, 1],
    [6, 300, 60],
  ] as const) {
    tf.tidy(() => {
      const logits = rand([N, V], scale);
      const z = logits.dataSync() as Float32Array;
      const { targets: y, mask: maskValues } = lossRows(N, V);
      // At scale 60 some targets sit 100+ below the row's largest logit: p[y] underflows to 0 in float32.
      const targets = tf.tensor1d(y, 'int32');
      const mask = tf.tensor1d(maskValues, 'float32');
      const [value, probs] = runKernel(SOFTMAX_XENT_KERNEL, { logits, targets, mask });
      const [, wantProbs] = softmaxCrossEntropyOps({ logits, targets, mask });
      assert.ok(scaledDiff(probs, wantProbs) < 1e-7, `N=${N} V=${V}: probs`);
      const want = refLoss(z, y, maskValues, N, V);
      const got = value.dataSync()[0];
      assert.ok(Math.abs(got - want) <= 1e-6 * Math.max(1, Math.abs(want)), `N=${N} V=${V}: loss ${got} vs ${want}`);
      const pw = wantProbs.dataSync();
      if (scale === 60)
        assert.ok(
          y.some((t, i) => maskValues[i] === 1 && pw[i * V + t] === 0),
          'no target probability underflowed',
        );
    });
  }
});

test('loss forward kernel refuses a target outside the vocabulary, and keeps no tensor', () => {
  const logits = rand([3, 5]);
  const targets = tf.tensor1d([1, 5, 0], 'int32');
  const mask = tf.ones([3]);
  const before = tf.memory().numTensors;
  assert.throws(
    () => runKernel(SOFTMAX_XENT_KERNEL, { logits, targets, mask }),
    /target 5 of row 1 is outside the vocabulary \[0, 5\)/,
  );
  assert.equal(tf.memory().numTensors, before);
  tf.dispose([logits, targets, mask]);
});

test('fused kernels refuse a missing input and a wrong dtype, naming the kernel and the input', () => {
  tf.tidy(() => {
    const x = rand([4, 3]);
    assert.throws(
      () => runKernel(ADAM_KERNEL, { p: x, m: x, v: x }, { lr: 1, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, scale: 1 }),
      /FrostAdam: missing input 'g'/,
    );
    assert.throws(
      () => runKernel(SUM_SQUARES_KERNEL, { x: tf.cast(x, 'int32') }),
      /FrostSumSquares: input 'x' must be float32, got int32/,
    );
    const logits = rand([2, 5]);
    const mask = tf.ones([2]);
    assert.throws(
      () => runKernel(SOFTMAX_XENT_KERNEL, { logits, targets: tf.tensor1d([1, 2], 'float32'), mask }),
      /FrostSoftmaxXent: input 'targets' must be int32, got float32/,
    );
  });
});

test('sum-of-squares kernel equals a float64 sum, vector body and scalar tail', () => {
  for (const n of [1, 3, 4, 17, 1027, 100_003]) {
    tf.tidy(() => {
      const x = rand([n], 3);
      const [got] = runKernel(SUM_SQUARES_KERNEL, { x });
      let want = 0;
      for (const v of x.dataSync()) want += v * v;
      assert.deepEqual(got.shape, []);
      assert.ok(Math.abs(got.dataSync()[0] - want) <= 1e-5 * want, `n=${n}: ${got.dataSync()[0]} vs ${want}`);
    });
  }
});

test('Adam kernel equals the tfjs ops bit for bit', () => {
  for (const shape of [[7], [33, 12], [3, 4]]) {
    for (const scale of [1, 0.37]) {
      tf.tidy(() => {
        const [p, m, g] = [rand(shape), rand(shape, 0.1), rand(shape)];
        const v = tf.abs(rand(shape, 0.01));
        const attrs = {
          lr: (1e-3 * Math.sqrt(1 - 0.999 ** 3)) / (1 - 0.9 ** 3),
          beta1: 0.9,
          beta2: 0.999,
          epsilon: 1e-8,
          scale,
        };
        const got = runKernel(ADAM_KERNEL, { p, m, v, g }, { ...attrs });
        const want = adamUpdateOps(p, m, v, g, attrs);
        got.forEach((t, i) =>
          assert.deepEqual(t.dataSync(), want[i].dataSync(), `${shape} scale ${scale}: output ${i}`),
        );
      });
    }
  }
});

test('moving-average kernel equals its ops bit for bit, vector body and scalar tail; mismatched shapes refused', () => {
  for (const n of [1, 3, 4, 17, 1027, 100_003]) {
    for (const decay of [0.999, 2 / 11, 0.5]) {
      tf.tidy(() => {
        const [average, param] = [rand([n], 2), rand([n], 3)];
        const [got] = runKernel(MOVING_AVERAGE_KERNEL, { average, param }, { decay });
        assert.deepEqual(got!.dataSync(), movingAverageOps(average, param, { decay }).dataSync(), `${n} ${decay}`);
      });
    }
  }
  tf.tidy(() =>
    assert.throws(
      () => runKernel(MOVING_AVERAGE_KERNEL, { average: rand([4]), param: rand([2, 2]) }, { decay: 0.9 }),
      /FrostMovingAverage: shapes \[4\] and \[2,2\] differ/,
    ),
  );
});

function gruWeights(input: number, H: number): GruWeights {
  return {
    hidden: H,
    Wx: tf.variable(rand([input, 3 * H], 0.5)),
    bx: tf.variable(rand([3 * H], 0.1)),
    Wh: tf.variable(rand([H, 3 * H], 0.5)),
    bh: tf.variable(rand([3 * H], 0.1)),
  };
}

/** Gradients of Σ_t ⟨h_t, r_t⟩ over a masked GRU recurrence with a second input share, per mode. */
function gruRecurrenceGrads(
  mode: FusedMode,
  w: GruWeights,
  xs: tf.Tensor2D[],
  x2s: tf.Tensor2D[],
  masks: tf.Tensor2D[],
  rs: tf.Tensor[],
  h0: tf.Tensor2D,
) {
  return withMode(mode, () =>
    tf.variableGrads(() => {
      const hWh = sharedWeightMatMul(w.Wh);
      let h = tf.tanh(h0) as tf.Tensor2D;
      let loss = tf.scalar(0);
      xs.forEach((x, t) => {
        h = gruStepWith(w, tf.add(tf.matMul(x, w.Wx), w.bx) as tf.Tensor2D, h, hWh, { gx2: x2s[t], mask: masks[t] });
        loss = tf.add(loss, tf.sum(tf.mul(h, rs[t])));
      });
      return loss as tf.Scalar;
    }),
  );
}

test('GRU steps: values and gradients equal autodiff through the unfused cell (wasm kernels and tfjs ops)', () => {
  for (const backend of ['wasm', 'cpu']) {
    withBackend(backend, () => {
      const [B, I, H, T] = [4, 6, 5, 4];
      const w = gruWeights(I, H);
      const xs = Array.from({ length: T }, () => rand([B, I]) as tf.Tensor2D);
      const x2s = Array.from({ length: T }, () => rand([B, 3 * H]) as tf.Tensor2D);
      const masks = [mask01(B, [0, 1, 2, 3]), mask01(B, [0, 1, 3]), mask01(B, [0, 3]), mask01(B, [0])];
      const rs = Array.from({ length: T }, () => rand([B, H]));
      const h0 = tf.variable(rand([B, H])) as tf.Variable<tf.Rank.R2>;
      const want = gruRecurrenceGrads('unfused', w, xs, x2s, masks, rs, h0);
      for (const mode of ['auto', 'ops'] as const) {
        const got = gruRecurrenceGrads(mode, w, xs, x2s, masks, rs, h0);
        assert.ok(scaledDiff(got.value, want.value) < 1e-6, `${backend}/${mode}: loss`);
        for (const name of Object.keys(want.grads)) {
          assert.ok(scaledDiff(got.grads[name], want.grads[name]) < 1e-5, `${backend}/${mode}: gradient of ${name}`);
        }
      }
      tf.dispose([w.Wx, w.bx, w.Wh, w.bh, h0]);
    });
  }
});

test('attention steps: values and gradients equal autodiff through the unfused graph (wasm kernels and tfjs ops)', () => {
  for (const backend of ['wasm', 'cpu']) {
    withBackend(backend, () => {
      const [B, S, A, H, att, T] = [3, 5, 6, 4, 7, 3];
      const w: AttentionWeights = {
        Ua: tf.variable(rand([A, att])),
        Wa: tf.variable(rand([H, att])),
        ba: tf.variable(rand([att], 0.2)),
        v: tf.variable(rand([att, 1])),
      };
      const ann = tf.variable(rand([B, S, A]));
      const s0 = tf.variable(rand([B, H]));
      const Ws = tf.variable(rand([A, H]));
      const srcMask = tf.tensor2d([1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0], [B, S]);
      const rs = Array.from({ length: T }, () => rand([B, A]));
      const run = (mode: FusedMode) =>
        withMode(mode, () =>
          tf.variableGrads(() => {
            const annotations = tf.tanh(ann) as tf.Tensor3D;
            const keys = tf.reshape(tf.matMul(tf.reshape(annotations, [B * S, A]), w.Ua), [B, S, att]) as tf.Tensor3D;
            const attend = attentionSteps(w, annotations, keys, srcMask, sharedWeightMatMul(w.Wa));
            let s = s0 as tf.Tensor2D;
            let loss = tf.scalar(0);
            for (let t = 0; t < T; t++) {
              const c = attend(s);
              loss = tf.add(loss, tf.sum(tf.mul(c, rs[t])));
              s = tf.tanh(tf.add(s, tf.matMul(c, Ws))) as tf.Tensor2D;
            }
            return loss as tf.Scalar;
          }),
        );
      const want = run('unfused');
      for (const mode of ['auto', 'ops'] as const) {
        const got = run(mode);
        assert.ok(scaledDiff(got.value, want.value) < 1e-6, `${backend}/${mode}: loss`);
        for (const name of Object.keys(want.grads)) {
          assert.ok(scaledDiff(got.grads[name], want.grads[name]) < 1e-5, `${backend}/${mode}: gradient of ${name}`);
        }
      }
      tf.dispose([w.Ua, w.Wa, w.ba, w.v, ann, s0, Ws]);
    });
  }
});

test('rnn-attn loss: value and every gradient, fused vs unfused, and no tensor left behind', () => {
  const { pairs, sizes } = toyWordPairs({ seed: 3, train: 40 });
  const batch = makeBatch(pairs, planBatches(pairs, { seed: 1, maxSentences: 12 }, 0)[0]);
  // The tiny preset has no dropout, so both modes compute the same function.
  const model = buildModel('rnn-attn', resolveArchConfig('rnn-attn', 'tiny'), sizes, { name: 'learned' }, 5);
  const grads = (mode: FusedMode) =>
    withMode(mode, () => tf.variableGrads(() => model.lossSum(batch, true), [...model.params.learnable.values()]));
  const want = grads('unfused');
  const before = tf.memory().numTensors;
  const got = grads('auto');
  assert.ok(scaledDiff(got.value, want.value) < 1e-5, 'loss');
  for (const name of Object.keys(want.grads))
    assert.ok(scaledDiff(got.grads[name], want.grads[name]) < 1e-4, `gradient of ${name}`);
  tf.dispose([got.value, ...Object.values(got.grads)]);
  assert.equal(tf.memory().numTensors, before, 'tensors left behind by the fused loss and its gradients');
  tf.dispose([want.value, ...Object.values(want.grads)]);
  model.params.dispose();
});

test('the fused kernels also run on the threaded wasm build (shared heap)', () => {
  const script = `
    (async () => {
      const tf = await import('@tensorflow/tfjs-core');
      const { initBackend } = await import('./train/backend/select.ts');
      const gru = await import('./models/layers/gru.ts');
      const att = await import('./models/layers/attention.ts');
      const info = await initBackend({ prefer: 'wasm', quiet: true, wasmThreads: 2 });
      const r = (shape, k) => tf.reshape(tf.mul(tf.sin(tf.range(1, shape.reduce((a, b) => a * b, 1) + 1)), k), shape);
      const diff = (a, b) => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0];
      const g = { gx: r([3, 21], 2), hw: r([3, 21], 1), bh: r([21], 0.5), h: r([3, 7], 1) };
      const k1 = tf.engine().runKernel(gru.GRU_CELL_KERNEL, g, {});
      const o1 = gru.gruCellOps(g);
      const a = { q: r([2, 6], 1), keys: r([2, 3, 6], 1), v: r([6], 1), annotations: r([2, 3, 5], 1) };
      const k2 = tf.engine().runKernel(att.ATTENTION_KERNEL, a, {});
      const o2 = att.attentionOps(a);
      console.log(JSON.stringify({ threads: info.threads, gru: diff(k1[0], o1[0]), attention: diff(k2[0], o2[0]) }));
    })();`;
  const out = runScriptInChild<{ threads: number; gru: number; attention: number }>(script, 90_000);
  assert.equal(out.threads, 2);
  assert.ok(out.gru < 1e-6 && out.attention < 1e-6, JSON.stringify(out));
});
