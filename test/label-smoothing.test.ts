/**
 * Label smoothing (models/loss.ts, fairseq's label_smoothed_cross_entropy):
 *  - the wasm kernels and the tfjs-ops fallback against autodiff through logSoftmax with an explicit
 *    smoothed target distribution, value, NLL and gradient, padded rows excluded;
 *  - ε = 0 keeps the plain cross-entropy bit for bit;
 *  - every registered architecture hands the recipe's loss options to the loss: its loss is
 *    (1 − ε − ε') NLL + ε' Σ, affine in ε, with the NLL reported unchanged beside it.
 */
import '@tensorflow/tfjs';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { archNames, buildModel, getArch, resolveArchConfig, type ModelBatch } from '../models/index.ts';
import {
  maskedCrossEntropySum,
  SOFTMAX_XENT_GRAD_KERNEL,
  SOFTMAX_XENT_KERNEL,
  softmaxCrossEntropyGradOps,
  softmaxCrossEntropyOps,
} from '../models/loss.ts';
import { initBackend } from '../train/backend/select.ts';
import { makeBatch, planBatches } from '../train/data/batches.ts';
import { syntheticImageBatch } from './helpers/caption-batches.ts';
import { lossRows } from './helpers/loss-rows.ts';
import { uniformTensors } from './helpers/random-tensors.ts';
import { scaledDiff, withMode } from './helpers/tensor-compare.ts';
import { toyWordPairs } from './helpers/toy-pairs.ts';

await initBackend({ prefer: 'wasm', quiet: true });

const rand = uniformTensors(77, 'smoothing');

/** −Σ_i mask_i Σ_j q_ij log p_ij with q = 1 − ε at the target and ε / (|V| − 1) elsewhere, by autodiff. */
function reference(z: tf.Tensor, y: tf.Tensor1D, mask: tf.Tensor1D, eps: number) {
  const V = z.shape[1]!;
  return tf.valueAndGrad((x: tf.Tensor) => {
    const q = tf.oneHot(y, V, 1 - eps, eps / (V - 1), 'float32');
    return tf.neg(tf.sum(tf.mul(tf.sum(tf.mul(tf.logSoftmax(x), q), 1), mask))) as tf.Scalar;
  })(z);
}

const cases = [
  [5, 7, 6],
  [9, 64, 3],
  [3, 2, 1],
  [37, 301, 8],
] as const;

for (const mode of ['auto', 'ops'] as const) {
  test(`${mode === 'auto' ? 'wasm kernels' : 'tfjs ops'}: smoothed value, NLL and gradient equal autodiff with explicit smoothed targets`, () => {
    for (const [N, V, scale] of cases) {
      for (const eps of [0.1, 0.3]) {
        tf.tidy(() => {
          const z = rand([N, V], scale);
          const rows = lossRows(N, V);
          const y = tf.tensor1d(rows.targets, 'int32');
          const mask = tf.tensor1d(rows.mask, 'float32');
          let nll = NaN;
          const ours = withMode(mode, () =>
            tf.valueAndGrad((x: tf.Tensor) =>
              maskedCrossEntropySum(x as tf.Tensor2D, y, mask, { labelSmoothing: eps, onNll: (v) => (nll = v) }),
            )(z),
          );
          const want = reference(z, y, mask, eps);
          const wantNll = reference(z, y, mask, 0).value.dataSync()[0];
          const at = `${mode} N=${N} V=${V} ε=${eps}`;
          const [v, w] = [ours.value.dataSync()[0], want.value.dataSync()[0]];
          assert.ok(Math.abs(v - w) <= 2e-5 * Math.max(1, Math.abs(w)), `${at}: loss ${v} vs ${w}`);
          assert.ok(
            Math.abs(nll - wantNll) <= 2e-5 * Math.max(1, Math.abs(wantNll)),
            `${at}: nll ${nll} vs ${wantNll}`,
          );
          assert.ok(scaledDiff(ours.grad, want.grad) < 1e-5, `${at}: gradient`);
          // Padded rows get no gradient at all.
          const g = ours.grad.dataSync();
          for (let i = 2; i < N; i += 3) for (let j = 0; j < V; j++) assert.ok(g[i * V + j] === 0);
        });
      }
    }
  });
}

test('smoothing kernels equal their tfjs-ops contract; ε = 0 is the plain cross-entropy bit for bit', () => {
  for (const [N, V, scale] of cases) {
    tf.tidy(() => {
      const logits = rand([N, V], scale);
      const targets = tf.tensor1d(
        Array.from({ length: N }, (_, i) => (i * 5) % V),
        'int32',
      );
      const mask = tf.tensor1d(
        Array.from({ length: N }, (_, i) => (i % 4 === 3 ? 0 : 1)),
        'float32',
      );
      const run = (name: string, inputs: tf.NamedTensorMap, attrs: tf.NamedAttrMap) =>
        tf.engine().runKernel(name, inputs, attrs) as unknown as tf.Tensor[];
      for (const smoothing of [0, 0.1]) {
        const [value, probs, nll] = run(SOFTMAX_XENT_KERNEL, { logits, targets, mask }, { smoothing });
        const [wValue, wProbs, wNll] = softmaxCrossEntropyOps({ logits, targets, mask }, { smoothing });
        assert.ok(scaledDiff(probs, wProbs) < 1e-7);
        assert.ok(
          scaledDiff(value, wValue) < 1e-5,
          `value ε=${smoothing}: ${value.dataSync()[0]} vs ${wValue.dataSync()[0]}`,
        );
        assert.ok(scaledDiff(nll, wNll) < 1e-5);
        const gradInputs = { probs, targets, mask, dy: tf.scalar(0.37) };
        const [grad] = run(SOFTMAX_XENT_GRAD_KERNEL, gradInputs, { smoothing });
        const [wGrad] = softmaxCrossEntropyGradOps(gradInputs, { smoothing });
        assert.ok(scaledDiff(grad, wGrad) < 1e-7, `gradient ε=${smoothing}`);
      }
      // No smoothing attribute (the contract before smoothing) and ε = 0 give identical bits.
      const [a] = run(SOFTMAX_XENT_KERNEL, { logits, targets, mask }, {});
      const [b] = run(SOFTMAX_XENT_KERNEL, { logits, targets, mask }, { smoothing: 0 });
      assert.equal(a.dataSync()[0], b.dataSync()[0]);
    });
  }
});

test('label smoothing out of [0, 1) is refused', () => {
  tf.tidy(() => {
    const z = rand([2, 4]);
    const y = tf.tensor1d([1, 2], 'int32');
    const m = tf.ones([2]) as tf.Tensor1D;
    assert.throws(() => maskedCrossEntropySum(z as tf.Tensor2D, y, m, { labelSmoothing: 1 }), /\[0, 1\), got 1/);
    assert.throws(() => maskedCrossEntropySum(z as tf.Tensor2D, y, m, { labelSmoothing: -0.1 }), /got -0.1/);
  });
});

/** A small batch of the architecture's input kind. */
function batchFor(kind: 'tokens' | 'image'): { batch: ModelBatch; sizes: Parameters<typeof buildModel>[2] } {
  if (kind === 'image') {
    const batch = syntheticImageBatch(3, { images: 2, captionsPerImage: 2, size: 32, vocab: 30, maxLen: 5 });
    return { batch, sizes: { tgtVocab: 30, image: { kind: 'pixels', size: 32 } } };
  }
  const { pairs, sizes } = toyWordPairs({ seed: 3, train: 30 });
  const batch = makeBatch(pairs, planBatches(pairs, { seed: 1, maxSentences: 8 }, 0)[0]);
  return { batch, sizes };
}

for (const arch of archNames({ family: 'seq2seq' })) {
  test(`${arch}: lossSum applies the recipe's label smoothing and reports the NLL beside it`, () => {
    const def = getArch(arch);
    const preset = 'tiny' in def.presets ? 'tiny' : Object.keys(def.presets)[0]!;
    // Dropout off, so that every call computes the same function of the parameters.
    const config = { ...resolveArchConfig(arch, preset), ...('dropout' in def.presets[preset]! ? { dropout: 0 } : {}) };
    const { batch, sizes } = batchFor(def.inputKind);
    const model = buildModel(arch, config, sizes, { name: 'learned' }, 5);
    const at = (eps: number) => {
      let nll = 0;
      const value = tf.tidy(
        () => model.lossSum(batch, false, { labelSmoothing: eps, onNll: (v) => (nll += v) }).dataSync()[0],
      );
      return { value, nll };
    };
    const [l0, l1, l2] = [at(0), at(0.1), at(0.2)];
    assert.ok(Math.abs(l1.value - l0.value) > 1e-3, `ε 0.1 changes the loss (${l1.value} vs ${l0.value})`);
    // Affine in ε for fixed logits: L(0.2) − L(0) = 2 (L(0.1) − L(0)).
    const slope = l1.value - l0.value;
    assert.ok(
      Math.abs(l2.value - l0.value - 2 * slope) <= 1e-3 * Math.abs(slope) + 1e-3,
      `${l0.value} ${l1.value} ${l2.value}`,
    );
    assert.ok(l0.nll > 0);
    for (const l of [l1, l2]) assert.ok(Math.abs(l.nll - l0.nll) <= 1e-5 * l0.nll, `NLL ${l.nll} vs ${l0.nll}`);
    model.params.dispose();
  });
}

test('inPlace: the loss kernels write over their input only when they hold it alone, with the same results', () => {
  const run = (name: string, inputs: tf.NamedTensorMap, attrs: tf.NamedAttrMap) =>
    tf.engine().runKernel(name, inputs, attrs) as unknown as tf.Tensor[];
  /** A copy with data of its own (tf.clone shares data on wasm). */
  const own = (t: tf.Tensor) => tf.tensor(t.dataSync(), t.shape, t.dtype);
  for (const scale of [6, 60])
    for (const smoothing of [0, 0.1])
      tf.tidy(() => {
        const [N, V] = [6, 300];
        const logits = rand([N, V], scale);
        const { targets: y, mask: m } = lossRows(N, V);
        const targets = tf.tensor1d(y, 'int32');
        const mask = tf.tensor1d(m, 'float32');
        const at = `scale ${scale} ε=${smoothing}`;
        const [value, probs, nll] = run(SOFTMAX_XENT_KERNEL, { logits, targets, mask }, { smoothing });

        const alone = own(logits);
        const [value2, probs2, nll2] = run(
          SOFTMAX_XENT_KERNEL,
          { logits: alone, targets, mask },
          { smoothing, inPlace: true },
        );
        assert.equal(probs2.dataId, alone.dataId, `${at}: the probabilities were not written over the logits`);
        assert.ok(scaledDiff(probs2, probs) < 1e-7, `${at}: probabilities`);
        // At scale 60 some target probabilities underflow: their rows' loss comes from the kept row maxima.
        for (const [a, b] of [
          [value2, value],
          [nll2, nll],
        ])
          assert.ok(Math.abs(a.dataSync()[0] - b.dataSync()[0]) <= 1e-6 * Math.abs(b.dataSync()[0]), `${at}: value`);

        const held = own(logits);
        const other = tf.clone(held);
        const [, probs3] = run(SOFTMAX_XENT_KERNEL, { logits: held, targets, mask }, { smoothing, inPlace: true });
        assert.notEqual(probs3.dataId, held.dataId, `${at}: logits another tensor shares were overwritten`);
        assert.deepEqual(other.dataSync(), logits.dataSync());

        const dy = tf.scalar(0.37);
        const [grad] = run(SOFTMAX_XENT_GRAD_KERNEL, { probs, targets, mask, dy }, { smoothing });
        const saved = own(probs);
        const [grad2] = run(
          SOFTMAX_XENT_GRAD_KERNEL,
          { probs: saved, targets, mask, dy },
          { smoothing, inPlace: true },
        );
        assert.equal(grad2.dataId, saved.dataId, `${at}: the gradient was not written over the probabilities`);
        assert.deepEqual(grad2.dataSync(), grad.dataSync());
      });
});
