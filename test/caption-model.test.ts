/**
 * The captioning decoders (models/archs/show-tell.ts, show-attend-tell.ts) with every output head:
 * parameter counts from the papers' equations, a few training steps (the loss falls, frozen
 * matrices stay bit-identical, nothing leaks), and ONNX export with parity against tfjs.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { ort } from '../core/runtime/ort-node.ts';
import * as tf from '@tensorflow/tfjs-core';
import { checkParity, PARITY_TOLERANCE, type ParityInputs } from '../export/parity.ts';
import { buildModel, headNames, resolveArchConfig, type ImageBatch, type Seq2SeqModel } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { Adam } from '../train/optim/adam.ts';
import { syntheticImageBatch } from './helpers/caption-batches.ts';
import { checkModel } from './helpers/onnx-check.ts';

const SEED = 5;
const SIZE = 32;
const VOCAB = 40;
const sizes = { tgtVocab: VOCAB, image: { kind: 'pixels', size: SIZE } as const };
let batches: ImageBatch[];

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  batches = [0, 1].map((i) =>
    syntheticImageBatch(SEED + i, { images: 3, captionsPerImage: 2, size: SIZE, vocab: VOCAB, maxLen: 5 }),
  );
});

/** Image rows and teacher-forced captions of a batch, as parity inputs (one row per caption). */
function parityInputs(batch: ImageBatch): ParityInputs {
  const per = batch.imageShape.reduce((a, b) => a * b, 1);
  const images = new Float32Array(batch.B * per);
  batch.imageRows.forEach((row, b) => images.set(batch.images.subarray(row * per, (row + 1) * per), b * per));
  const targets = Array.from({ length: batch.B }, (_, b) => {
    const out = batch.tgtOut.subarray(b * batch.T, (b + 1) * batch.T);
    const len = batch.tgtMask.subarray(b * batch.T, (b + 1) * batch.T).reduce((a, m) => a + m, 0);
    return Int32Array.from(out.subarray(0, len - 1));
  });
  const shape = [batch.B, ...batch.imageShape];
  return {
    tfjs: () => ({ kind: 'image', images: tf.tensor(images, shape) }),
    onnx: { pixels: new ort.Tensor('float32', images, shape) },
    targets,
  };
}

/**
 * Learnable parameters of the CNN (tiny preset: stem + two residual stages) and of each decoder, from their equations.
 */
function cnnParams(channels: number[]): number {
  const conv = (k: number, cin: number, cout: number) => k * k * cin * cout + cout;
  let n = conv(3, 3, channels[0]);
  for (let i = 1; i < channels.length; i++)
    n +=
      conv(1, channels[i - 1], channels[i]) +
      conv(3, channels[i - 1], channels[i]) +
      conv(3, channels[i], channels[i]) +
      1;
  return n;
}
const lstmParams = (input: number, H: number) => 4 * H * input + 4 * H + 4 * H * H + 4 * H;

function bodyParams(arch: string, cfg: Record<string, number>, channels: number[]): number {
  const C = channels[channels.length - 1];
  const { embedding: e, hidden: H } = cfg;
  const words = VOCAB * e;
  if (arch === 'show-tell') return cnnParams(channels) + (C * e + e) + lstmParams(e, H) + words;
  const { attention: att, output: d } = cfg;
  return (
    cnnParams(channels) +
    2 * (C * H + H) +
    (C * att + H * att + att + att) +
    (H + 1) +
    lstmParams(e + C, H) +
    ((H + C + e) * d + d) +
    words
  );
}

function headParams(head: string, d: number, e: number): number {
  const P = d === e ? 0 : d * e;
  const table: Record<string, number> = {
    learned: d * VOCAB + VOCAB,
    tied: P + VOCAB,
    'fixed-uniform': 0,
    'fixed-l2': 0,
    hadamard: 1,
    'shared-l2': P + VOCAB,
    'shared-sqnorm': P + VOCAB,
    'shared-distance': P,
    'shared-cosine': P + 1,
    drill: P + 2 * (e * e + e) + VOCAB,
  };
  assert.ok(head in table, `no formula for head '${head}'`);
  return table[head];
}

for (const arch of ['show-tell', 'show-attend-tell']) {
  const config = resolveArchConfig(arch, 'tiny');
  const cfg = config as Record<string, number> & { cnnChannels: number[] };
  const d = arch === 'show-tell' ? cfg.hidden : cfg.output;

  describe(`${arch} with every output head`, () => {
    test('every registered head is covered and the tiny preset exercises d != e', () => {
      assert.notEqual(d, cfg.embedding);
      for (const head of headNames()) headParams(head, d, cfg.embedding);
    });

    for (const head of headNames()) {
      test(`${head}: parameter count, training steps, frozen matrix unchanged, ONNX parity`, async () => {
        const model: Seq2SeqModel = buildModel(arch, config, sizes, { name: head }, SEED);
        try {
          assert.equal(model.inputKind, 'image');
          assert.deepEqual(model.imageShape, [3, SIZE, SIZE]);
          assert.equal(
            model.params.counts().learnable,
            bodyParams(arch, cfg, cfg.cnnChannels) + headParams(head, d, cfg.embedding),
          );
          const frozenBefore = new Map(
            [...model.params.frozen].map(([name, t]) => [name, (t.dataSync() as Float32Array).slice()]),
          );
          const optimizer = new Adam(model.params.learnable, { learningRate: 1e-2 });
          const losses: number[] = [];
          const tensorsBefore = tf.memory().numTensors;
          for (let i = 0; i < 8; i++) {
            const batch = batches[i % 2];
            losses.push(optimizer.minimize(() => tf.div(model.lossSum(batch, true), batch.tokens) as tf.Scalar).loss);
          }
          assert.equal(tf.memory().numTensors, tensorsBefore, 'a training step leaked tensors');
          const first = (losses[0] + losses[1]) / 2;
          const last = (losses[6] + losses[7]) / 2;
          assert.ok(last < first, `loss did not fall: ${losses.map((l) => l.toFixed(3)).join(' ')}`);
          for (const [name, values] of frozenBefore) {
            assert.deepEqual(model.params.frozen.get(name)!.dataSync(), values, `${name} changed during training`);
          }
          optimizer.dispose();

          const { encoder, decoder, graphs } = model.toOnnx();
          assert.deepEqual(graphs.encoder.inputs, ['pixels']);
          const encoderBytes = encoder.toBytes();
          const decoderBytes = decoder.toBytes();
          if (head === 'learned' || head === 'hadamard') {
            checkModel(encoderBytes);
            checkModel(decoderBytes);
          }
          const parity = await checkParity(model, encoderBytes, decoderBytes, parityInputs(batches[0]), 2, 0);
          assert.ok(
            parity.maxScaledDiff <= PARITY_TOLERANCE,
            `parity ${parity.maxScaledDiff} at ${JSON.stringify(parity.worst)}`,
          );
        } finally {
          model.params.dispose();
        }
      });
    }

    test('a token batch is refused with a message naming what the model reads', () => {
      const model = buildModel(arch, config, sizes, { name: 'learned' }, SEED);
      const tokens = {
        B: 1,
        S: 1,
        T: 1,
        src: Int32Array.of(4),
        srcLen: Int32Array.of(1),
        tgtIn: Int32Array.of(2),
        tgtOut: Int32Array.of(3),
        tgtMask: Float32Array.of(1),
        tokens: 1,
      };
      assert.throws(() => model.lossSum(tokens, true), /reads images, but was given a batch of token ids/);
      model.params.dispose();
    });
  });
}
