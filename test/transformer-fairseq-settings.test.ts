import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { checkParity, PARITY_TOLERANCE } from '../export/parity.ts';
import { buildHead } from '../models/heads/index.ts';
import { createPositionalEncoding, positionVectors, positionVectorsAt } from '../models/layers/positional-encoding.ts';
import { ParamStore } from '../models/params.ts';
import { buildModel, resolveArchConfig, type ModelSizes, type Seq2SeqModel } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import type { EncodedPair } from '../train/data/batches.ts';
import { startOnnxChecker, type OnnxChecker } from './helpers/onnx-checker.ts';
import { toyJointPairs } from './helpers/toy-pairs.ts';
import { trainSteps } from './helpers/train-steps.ts';

/**
 * The Transformer settings that fairseq's conventions are (docs/import.md): fairseq's sinusoidal positions
 * (`sinusoidal-fairseq`), the layer norm over the embeddings (`layernormEmbedding`), and the `sourceRows` head option
 * an imported model's output layer is built with, in tfjs and in the ONNX graphs. test/import-fairseq.test.ts checks
 * whole imported models against a PyTorch reference.
 */

const SEED = 7;
const BOS = 2;
const PAD = 0;
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

async function assertParity(model: Seq2SeqModel): Promise<void> {
  const { encoder, decoder } = model.toOnnx();
  const [encoderBytes, decoderBytes] = [encoder.toBytes(), decoder.toBytes()];
  await checker.check(encoderBytes);
  await checker.check(decoderBytes);
  const parity = await checkParity(model, encoderBytes, decoderBytes, samples(5), BOS, PAD);
  assert.ok(parity.maxScaledDiff <= PARITY_TOLERANCE, `parity ${parity.maxScaledDiff}`);
}

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
      try {
        const names = [...model.params.learnable.keys()];
        assert.ok(names.includes('encoder/embedding_norm/gamma') && names.includes('decoder/embedding_norm/beta'));
        trainSteps(model, pairs, 3, { learningRate: 2e-3, maxSentences: 32 });
        await assertParity(model);
      } finally {
        model.params.dispose();
      }
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
      try {
        await assertParity(model);
      } finally {
        model.params.dispose();
      }
    }
  });

  test('settings are checked: an unknown position kind is refused, naming the choices', () => {
    assert.throws(() => resolveArchConfig('transformer', 'tiny', { positions: 'fairseq' }), /positions/);
    assert.throws(() => resolveArchConfig('transformer', 'tiny', { layernormEmbedding: 'yes' }), /layernormEmbedding/);
  });
});
