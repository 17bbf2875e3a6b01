import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { buildHead } from '../models/heads/index.ts';
import { feedForward, type FeedForwardWeights } from '../models/layers/feed-forward.ts';
import { createPositionalEncoding, positionVectors, positionVectorsAt } from '../models/layers/positional-encoding.ts';
import { ParamStore } from '../models/params.ts';
import { buildModel, resolveArchConfig, type ModelSizes, type Seq2SeqModel } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import type { EncodedPair } from '../train/data/batches.ts';
import { startOnnxChecker, type OnnxChecker } from './helpers/onnx-checker.ts';
import { assertOnnxParity } from './helpers/onnx-parity.ts';
import { uniformTensors } from './helpers/random-tensors.ts';
import { toyJointPairs } from './helpers/toy-pairs.ts';
import { trainSteps } from './helpers/train-steps.ts';

/**
 * The Transformer settings that imported models' conventions are (docs/import.md), in tfjs and in the ONNX graphs.
 * Marian's: the swish (SiLU) feed-forward activation and the embedding scale (`embeddingScale: 'none'` for
 * `scale_embedding: false`); its sinusoidal positions are frost's `sinusoidal` layout. fairseq's: its sinusoidal
 * positions (`sinusoidal-fairseq`), the layer norm over the embeddings (`layernormEmbedding`), and the `sourceRows`
 * head option an imported model's output layer is built with. test/import-marian.test.ts and
 * test/import-fairseq.test.ts check whole imported models against PyTorch references.
 */

const SEED = 7;
const BOS = 2;
const PAD = 0;
const rand = uniformTensors(43, 'marian-settings');
let pairs: EncodedPair[];
let joint: ModelSizes;
let separate: ModelSizes;
let checker: OnnxChecker;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  ({ pairs, joint, separate } = toyJointPairs({ seed: 3, train: 200, val: 10, test: 10 }));
  checker = await startOnnxChecker();
});

after(() => checker.close());

function samples(n: number) {
  return pairs.slice(0, n).map((p) => ({ src: Int32Array.from(p.src), tgt: Int32Array.from(p.tgt) }));
}

/** Trains `steps` steps (none: checks the model as built), checks ONNX parity, and disposes the model. */
async function assertParity(model: Seq2SeqModel, steps = 0): Promise<void> {
  try {
    if (steps > 0) trainSteps(model, pairs, steps, { learningRate: 2e-3, maxSentences: 32 });
    await assertOnnxParity(checker, model, samples(5), BOS, PAD);
  } finally {
    model.params.dispose();
  }
}

describe('transformer settings for Marian: swish, embedding scale', () => {
  test('swish: the feed-forward block is fc2(x·σ(x)) of fc1, and its gradients are the plain ops’', () => {
    tf.tidy(() => {
      const [d, inner] = [6, 10];
      const w = {
        name: 'ff',
        activation: 'swish',
        W1: rand([d, inner]),
        b1: rand([inner]),
        W2: rand([inner, d]),
        b2: rand([d]),
      } as unknown as FeedForwardWeights;
      const x = rand([2, 3, d]);
      const plain = (v: FeedForwardWeights, h: tf.Tensor) => {
        const pre = tf.add(tf.matMul(tf.reshape(h, [6, d]) as tf.Tensor2D, v.W1 as tf.Tensor2D), v.b1);
        const act = tf.div(pre, tf.add(tf.exp(tf.neg(pre)), 1));
        return tf.reshape(tf.add(tf.matMul(act as tf.Tensor2D, v.W2 as tf.Tensor2D), v.b2), h.shape);
      };
      const ours = (v: FeedForwardWeights, h: tf.Tensor) => feedForward(v, h, (a) => a);
      const loss = (block: typeof plain) => (h: tf.Tensor, W1: tf.Tensor) =>
        tf.sum(tf.square(block({ ...w, W1 } as unknown as FeedForwardWeights, h)));
      const largest = (a: tf.Tensor, b: tf.Tensor) => Math.max(...tf.sub(a, b).abs().dataSync());
      assert.ok(largest(ours(w, x), plain(w, x)) < 1e-5, 'forward');
      const [gOurs, gPlain] = [ours, plain].map((block) => tf.grads(loss(block))([x, w.W1]));
      for (const [i, g] of gOurs!.entries()) assert.ok(largest(g, gPlain![i]!) < 1e-5, `gradient ${i}`);
    });
  });

  test("embeddingScale 'none' adds E[token] unscaled: equal to 'sqrt-d' over a √d-scaled embedding", async () => {
    const sqrt = resolveArchConfig('transformer', 'tiny', { norm: 'post' });
    const none = resolveArchConfig('transformer', 'tiny', { norm: 'post', embeddingScale: 'none' });
    const a = buildModel('transformer', sqrt, separate, { name: 'learned' }, SEED);
    const b = buildModel('transformer', none, separate, { name: 'learned' }, SEED);
    try {
      const d = sqrt.model as number;
      for (const [name, v] of a.params.learnable) {
        const target = b.params.learnable.get(name)!;
        target.assign(name.endsWith('/embedding') ? tf.mul(v, Math.sqrt(d)) : v);
      }
      const s = samples(3);
      const S = Math.max(...s.map((p) => p.src.length));
      const T = Math.max(...s.map((p) => p.tgt.length)) + 1;
      const src = new Int32Array(3 * S).fill(PAD);
      const tgtIn = new Int32Array(3 * T).fill(PAD);
      s.forEach((p, i) => {
        src.set(p.src, i * S);
        tgtIn[i * T] = BOS;
        tgtIn.set(p.tgt, i * T + 1);
      });
      const run = (m: Seq2SeqModel) =>
        tf.tidy(() =>
          (m as unknown as { forcedLogProbs: (...t: tf.Tensor[]) => tf.Tensor }).forcedLogProbs(
            tf.tensor2d(src, [3, S], 'int32'),
            tf.tensor1d(
              Int32Array.from(s, (p) => p.src.length),
              'int32',
            ),
            tf.tensor2d(tgtIn, [3, T], 'int32'),
          ),
        );
      const [la, lb] = [run(a), run(b)];
      const diff = tf.tidy(() => tf.max(tf.abs(tf.sub(la, lb))).dataSync()[0]!);
      tf.dispose([la, lb]);
      assert.ok(diff < 1e-4, `log-probabilities differ by ${diff}`);
      // And the scale changes something: the same weights without the √d give other outputs.
      const c = buildModel('transformer', none, separate, { name: 'learned' }, SEED);
      try {
        for (const [name, v] of a.params.learnable) c.params.learnable.get(name)!.assign(v);
        const [l1, l2] = [run(a), run(c)];
        const apart = tf.tidy(() => tf.max(tf.abs(tf.sub(l1, l2))).dataSync()[0]!);
        tf.dispose([l1, l2]);
        assert.ok(apart > 1e-3, `embeddingScale changed nothing (${apart})`);
      } finally {
        c.params.dispose();
      }
    } finally {
      a.params.dispose();
      b.params.dispose();
    }
  });

  test("Marian's settings (post-norm, swish, unscaled or √d embedding, tied head): ONNX parity after training", async () => {
    for (const embeddingScale of ['none', 'sqrt-d']) {
      const config = resolveArchConfig('transformer', 'tiny', { norm: 'post', activation: 'swish', embeddingScale });
      await assertParity(buildModel('transformer', config, joint, { name: 'tied' }, SEED), 3);
    }
  });

  test('settings are checked: an unknown activation or embedding scale is refused, naming the choices', () => {
    assert.throws(() => resolveArchConfig('transformer', 'tiny', { activation: 'silu' }), /activation/);
    assert.throws(() => resolveArchConfig('transformer', 'tiny', { embeddingScale: 'sqrt' }), /embeddingScale/);
  });
});

describe('transformer settings for fairseq: positions, layernormEmbedding, sourceRows', () => {
  test("sinusoidal-fairseq: fairseq's get_embedding table from position 2 (ω_i = 10000^(−i/(d/2−1)), sin then cos)", () => {
    const d = 16;
    const p = new ParamStore(1);
    const pe = createPositionalEncoding(p, 'x', 'sinusoidal-fairseq', d, 256);
    const frost = createPositionalEncoding(p, 'y', 'sinusoidal', d, 256);
    const got = positionVectors(pe, 0, 40).arraySync();
    const half = d / 2;
    for (let t = 0; t < 40; t++) {
      for (let i = 0; i < half; i++) {
        const angle = (t + 2) * Math.exp((-i * Math.log(10000)) / (half - 1));
        assert.ok(Math.abs(got[t]![i]! - Math.sin(angle)) < 2e-5, `sin ${t} ${i}`);
        assert.ok(Math.abs(got[t]![half + i]! - Math.cos(angle)) < 2e-5, `cos ${t} ${i}`);
      }
    }
    // One position per row, as decoders whose state says where each row is read them.
    const at = positionVectorsAt(pe, tf.tensor1d([0, 5, 39], 'int32')).arraySync();
    for (const [k, t] of [0, 5, 39].entries()) assert.deepEqual(at[k], got[t]);
    // Not frost's layout.
    const other = positionVectors(frost, 0, 40).arraySync();
    assert.ok(Math.abs(other[3]![2]! - got[3]![2]!) > 1e-2);
  });

  test("fairseq's settings (sinusoidal-fairseq, layernormEmbedding, post- and pre-norm, gelu): ONNX parity after training", async () => {
    for (const norm of ['post', 'pre']) {
      const config = resolveArchConfig('transformer', 'tiny', {
        norm,
        activation: 'gelu',
        positions: 'sinusoidal-fairseq',
        layernormEmbedding: true,
        embeddingScale: norm === 'pre' ? 'none' : 'sqrt-d',
      });
      const model = buildModel('transformer', config, norm === 'pre' ? joint : separate, { name: 'tied' }, SEED);
      const names = [...model.params.learnable.keys()];
      assert.ok(names.includes('encoder/embedding_norm/gamma') && names.includes('decoder/embedding_norm/beta'));
      await assertParity(model, 3);
    }
  });

  test("the sourceRows head option: a head over another model's rows, its logits gathered into frost's order", async () => {
    const V = 9;
    const d = 4;
    const p = new ParamStore(3);
    const embedding = p.variable('decoder/embedding', [V, d], { kind: 'uniform', limit: 1 });
    const ctx = { vocabSize: V, inputDim: d, embedding, params: p, seed: 5, dropout: 0, excludedTargets: [2] };
    // Source rows 0..7 (8 rows); frost id 8 is source row 0, 0 is 1, 3 is 2, 1 is 3; id 2 has no row (excluded).
    const sourceRows = { rows: 8, moved: { '0': 8, '1': 0, '2': 3, '3': 1 } };
    const plain = buildHead('fixed-l2', { ...ctx, params: new ParamStore(3), vocabSize: 8, excludedTargets: [] });
    const reordered = buildHead('fixed-l2', ctx, { sourceRows });
    const f = tf.randomNormal([3, d], 0, 1, 'float32', 1) as tf.Tensor2D;
    const a = plain.logits(f, false).arraySync();
    const b = reordered.logits(f, false).arraySync();
    const from = [1, 3, -1, 2, 4, 5, 6, 7, 0];
    for (let n = 0; n < 3; n++)
      from.forEach((r, id) => {
        if (r >= 0) assert.equal(b[n]![id], a[n]![r]);
        else assert.equal(b[n]![id], -1e4);
      });
    const fresh = () => ({ ...ctx, params: new ParamStore(3) });
    assert.throws(
      () => buildHead('fixed-l2', { ...fresh(), excludedTargets: [] }, { sourceRows }),
      /id 2 has no source row/,
    );
    assert.throws(() => buildHead('fixed-l2', fresh(), { sourceRows: { rows: 8, moved: { x: 1 } } }), /sourceRows/);
    // In a whole model, through the graphs: tied (the embedding's rows read in the source order) and learned.
    for (const head of ['tied', 'learned', 'fixed-l2']) {
      const config = resolveArchConfig('transformer', 'tiny', { positions: 'sinusoidal-fairseq' });
      const rows = separate.tgtVocab;
      const model = buildModel(
        'transformer',
        config,
        separate,
        { name: head, options: { sourceRows: { rows, moved: { '0': 1, '1': 0 } } } },
        SEED,
      );
      await assertParity(model);
    }
  });

  test('settings are checked: an unknown position kind is refused, naming the choices', () => {
    assert.throws(() => resolveArchConfig('transformer', 'tiny', { positions: 'fairseq' }), /positions/);
    assert.throws(() => resolveArchConfig('transformer', 'tiny', { layernormEmbedding: 'yes' }), /layernormEmbedding/);
  });
});
