import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { buildModel, headNames, resolveArchConfig, type Seq2SeqModel } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { makeBatch, planBatches, type EncodedPair } from '../train/data/batches.ts';
import { Adam } from '../train/optim/adam.ts';
import { checkParity, PARITY_TOLERANCE } from '../export/parity.ts';
import { type OnnxChecker, startOnnxChecker } from './helpers/onnx-checker.ts';
import { toyWordPairs } from './helpers/toy-pairs.ts';

const SEED = 3;
let pairs: EncodedPair[];
let sizes: { srcVocab: number; tgtVocab: number };
const config = resolveArchConfig('rnn-attn', 'tiny');
const cfg = config as { embedding: number; hidden: number; encoderHidden: number; attention: number; output: number };
/** ONNX's checker, one Python process for the 20 graphs of the heads. */
let checker: OnnxChecker;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  ({ pairs, sizes } = toyWordPairs({ seed: 1, train: 600, val: 10, test: 10 }));
  checker = await startOnnxChecker();
});

after(() => checker.close());

/** The rnn-attn parameters outside the head, written out from the architecture's equations. */
function bodyParams(): number {
  const { embedding: e, hidden: H, encoderHidden: eh, attention: att, output: d } = cfg;
  const A = 2 * eh;
  const gru = (input: number, h: number) => 3 * h * input + 3 * h + 3 * h * h + 3 * h;
  return (
    sizes.srcVocab * e + // source embedding
    2 * gru(e, eh) + // bidirectional encoder
    (A * H + H) + // initial decoder state
    sizes.tgtVocab * e + // target embedding
    (A * att + H * att + att + att) + // additive attention
    gru(e + A, H) + // decoder GRU
    ((H + A + e) * d + d) // output features f
  );
}

/** Learnable parameters each head adds, from the definitions in the papers (d != e, so shared heads project). */
function headParams(head: string): number {
  const { embedding: e, output: d } = cfg;
  const V = sizes.tgtVocab;
  const projection = d * e;
  const table: Record<string, number> = {
    learned: d * V + V,
    tied: projection + V,
    'fixed-uniform': 0,
    'fixed-l2': 0,
    hadamard: 1,
    'shared-l2': projection + V,
    'shared-sqnorm': projection + V,
    'shared-distance': projection,
    'shared-cosine': projection + 1,
    drill: projection + 2 * (e * e + e) + V,
  };
  assert.ok(head in table, `no formula for head '${head}'`);
  return table[head];
}

describe('output heads', () => {
  test('every registered head has a parameter formula', () => {
    assert.notEqual(cfg.output, cfg.embedding, 'the tiny preset should exercise the d != e projection');
    for (const head of headNames()) headParams(head);
  });

  test('fixed heads have exactly learned - (d|V| + |V|) learnable parameters', () => {
    const learned = buildModel('rnn-attn', config, sizes, { name: 'learned' }, SEED);
    const expected = learned.params.counts().learnable - (cfg.output * sizes.tgtVocab + sizes.tgtVocab);
    for (const head of ['fixed-uniform', 'fixed-l2']) {
      const m = buildModel('rnn-attn', config, sizes, { name: head }, SEED);
      assert.equal(m.params.counts().learnable, expected, head);
      assert.equal(m.params.counts().frozen, cfg.output * sizes.tgtVocab, head);
      m.params.dispose();
    }
    learned.params.dispose();
  });

  for (const head of [
    'learned',
    'tied',
    'fixed-uniform',
    'fixed-l2',
    'hadamard',
    'shared-l2',
    'shared-sqnorm',
    'shared-distance',
    'shared-cosine',
    'drill',
  ]) {
    test(`${head}: parameter count, training steps, no optimiser state for frozen tensors, ONNX parity`, async () => {
      const model: Seq2SeqModel = buildModel('rnn-attn', config, sizes, { name: head }, SEED);
      try {
        assert.equal(model.params.counts().learnable, bodyParams() + headParams(head));
        const optimizer = new Adam(model.params.learnable, { learningRate: 5e-3 });
        assertNoFrozenMoments(optimizer, model);
        const plan = planBatches(pairs, { seed: 1, maxSentences: 32 }, 0);
        const losses: number[] = [];
        const tensorsBefore = tf.memory().numTensors;
        for (let i = 0; i < 12; i++) {
          const batch = makeBatch(pairs, plan[i % plan.length]);
          losses.push(optimizer.minimize(() => tf.div(model.lossSum(batch, true), batch.tokens) as tf.Scalar).loss);
        }
        assert.equal(tf.memory().numTensors, tensorsBefore, 'a training step leaked tensors');
        const first = (losses[0] + losses[1]) / 2;
        const last = (losses[10] + losses[11]) / 2;
        assert.ok(last < first, `loss did not fall: ${losses.map((l) => l.toFixed(3)).join(' ')}`);
        assertNoFrozenMoments(optimizer, model);
        optimizer.dispose();

        const { encoder, decoder } = model.toOnnx();
        const encoderBytes = encoder.toBytes();
        const decoderBytes = decoder.toBytes();
        await Promise.all([checker.check(encoderBytes), checker.check(decoderBytes)]);
        const samples = pairs.slice(0, 5).map((p) => ({ src: Int32Array.from(p.src), tgt: Int32Array.from(p.tgt) }));
        const parity = await checkParity(model, encoderBytes, decoderBytes, samples, 2, 0);
        assert.ok(
          parity.maxScaledDiff <= PARITY_TOLERANCE,
          `parity ${parity.maxScaledDiff} at ${JSON.stringify(parity.worst)}`,
        );
      } finally {
        model.params.dispose();
      }
    });
  }

  test('the frozen-tensor check fails for an optimiser that was handed a frozen tensor', () => {
    const model = buildModel('rnn-attn', config, sizes, { name: 'fixed-uniform' }, SEED);
    const everything = new Map([...model.params.learnable, ...(model.params.frozen as Map<string, tf.Variable>)]);
    const optimizer = new Adam(everything);
    try {
      assert.ok(model.params.frozen.size > 0);
      assert.throws(() => assertNoFrozenMoments(optimizer, model), /optimiser holds moments for frozen/);
    } finally {
      optimizer.dispose();
      model.params.dispose();
    }
  });

  for (const head of ['shared-l2', 'shared-sqnorm', 'shared-distance', 'shared-cosine']) {
    test(`${head} stores the (normalised) embedding once, shared by lookup and output`, () => {
      const model = buildModel('rnn-attn', config, sizes, { name: head }, SEED);
      const tied = buildModel('rnn-attn', config, sizes, { name: 'tied' }, SEED);
      const bytes = model.toOnnx().decoder.initializerBytesByScope();
      const tiedBytes = tied.toOnnx().decoder.initializerBytesByScope();
      // The head keeps only its projection, bias and scale; the decoder holds E once plus, for the
      // rescaled heads, one scale per word.
      assert.ok(bytes.head <= (cfg.output * cfg.embedding + sizes.tgtVocab + 1) * 4, JSON.stringify(bytes));
      assert.ok(
        bytes.decoder <= tiedBytes.decoder + sizes.tgtVocab * 4,
        `${bytes.decoder} vs tied ${tiedBytes.decoder}`,
      );
      model.params.dispose();
      tied.params.dispose();
    });
  }

  test('tied heads store the embedding once in the decoder graph', () => {
    const model = buildModel('rnn-attn', config, sizes, { name: 'tied' }, SEED);
    const bytes = model.toOnnx().decoder.initializerBytesByScope();
    const embeddingBytes = sizes.tgtVocab * cfg.embedding * 4;
    assert.ok(bytes.decoder >= embeddingBytes);
    // the head stores only its projection and bias, not a second |V| x e matrix
    assert.equal(bytes.head, (cfg.output * cfg.embedding + sizes.tgtVocab) * 4);
    model.params.dispose();
  });

  test('the same seed rebuilds the same frozen matrix; another seed does not', () => {
    const a = buildModel('rnn-attn', config, sizes, { name: 'fixed-uniform' }, SEED);
    const b = buildModel('rnn-attn', config, sizes, { name: 'fixed-uniform' }, SEED);
    const c = buildModel('rnn-attn', config, sizes, { name: 'fixed-uniform' }, SEED + 1);
    const w = (m: Seq2SeqModel) => m.params.frozen.get('head/W')!.dataSync();
    assert.deepEqual(w(a), w(b));
    assert.notDeepEqual(w(a), w(c));
    const values = w(a);
    assert.ok(Math.min(...values) >= -10 && Math.max(...values) < 10 && Math.max(...values) > 9);
    for (const m of [a, b, c]) m.params.dispose();
  });

  test('dropout is drawn from the seed: the same seed gives the same training losses', () => {
    const withDropout = { ...config, dropout: 0.3 };
    const batch = makeBatch(pairs, planBatches(pairs, { seed: 1, maxSentences: 16 }, 0)[0]);
    const losses = (head: string) => {
      const m = buildModel('rnn-attn', withDropout, sizes, { name: head }, SEED);
      const out = [m.lossSum(batch, true), m.lossSum(batch, true)].map((t) => t.dataSync()[0]);
      m.params.dispose();
      return out;
    };
    for (const head of ['learned', 'drill']) {
      const [a1, a2] = losses(head);
      const [b1, b2] = losses(head);
      assert.equal(a1, b1, head);
      assert.equal(a2, b2, head);
      assert.notEqual(a1, a2, `${head}: two dropout draws should differ`);
    }
  });

  test('an unknown head is refused with the list of known ones', () => {
    assert.throws(
      () => buildModel('rnn-attn', config, sizes, { name: 'nope' }, SEED),
      /unknown output head 'nope'.*learned/,
    );
  });
});

/**
 * Frozen tensors never reach the optimiser: it holds first and second moments for exactly the
 * learnable tensors and for no frozen one. (Comparing a frozen tensor's
 * values before and after training could not fail: Adam only updates what it holds.)
 */
function assertNoFrozenMoments(optimizer: Adam, model: Seq2SeqModel): void {
  const learnable = [...model.params.learnable.keys()].sort();
  for (const moments of [optimizer.m, optimizer.v]) {
    const frozenHeld = [...moments.keys()].filter((name) => model.params.frozen.has(name));
    assert.deepEqual(frozenHeld, [], `the optimiser holds moments for frozen tensors: ${frozenHeld.join(', ')}`);
    assert.deepEqual([...moments.keys()].sort(), learnable, 'moments for exactly the learnable tensors');
  }
}
