/**
 * The captioning models' building blocks: the LSTM's gate order against onnxruntime's LSTM, the
 * CNN's export with its residual scales folded in, the wasm convolution-gradient kernels against
 * the tfjs cpu backend, and caption batching.
 */
import '@tensorflow/tfjs'; // gradient functions and the cpu backend
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ort } from '../core/runtime/ort-node.ts';
import * as tf from '@tensorflow/tfjs-core';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { SeededRandom } from '../core/random.ts';
import { ConvEncoder } from '../models/layers/conv-encoder.ts';
import { createLstm, LSTM_GATES, lstmInputProjection, lstmOnnxStep, lstmStep } from '../models/layers/lstm.ts';
import { ParamStore } from '../models/params.ts';
import { initBackend } from '../train/backend/select.ts';
import { makeCaptionBatch, planCaptionBatches, type EncodedCaptionImage } from '../train/data/caption-batches.ts';

await initBackend({ prefer: 'wasm', quiet: true });

const rng = new SeededRandom(11, 'caption-layers');
const randn = (n: number, scale = 1) => Float32Array.from({ length: n }, () => rng.normal() * scale);
const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

describe('LSTM', () => {
  test("one step equals onnxruntime's LSTM node (gate blocks i, o, f, c), and the forget bias starts at 1", async () => {
    const params = new ParamStore(3);
    const [N, input, H] = [5, 7, 6];
    const w = createLstm(params, 'lstm', input, H);
    const bx = w.bx.dataSync();
    for (let j = 0; j < 4 * H; j++) assert.equal(bx[j], Math.floor(j / H) === LSTM_GATES.forget ? 1 : 0, `bx[${j}]`);
    // Non-zero biases everywhere, so a permuted gate block would show.
    w.bx.assign(tf.tensor1d(randn(4 * H)));
    w.bh.assign(tf.tensor1d(randn(4 * H)));
    const x = randn(N * input);
    const h = randn(N * H, 0.5);
    const c = randn(N * H, 0.5);
    const next = tf.tidy(() => {
      const { h: hNext, c: cNext } = lstmStep(w, lstmInputProjection(w, tf.tensor2d(x, [N, input])), {
        h: tf.tensor2d(h, [N, H]),
        c: tf.tensor2d(c, [N, H]),
      });
      return { h: hNext, c: cNext };
    });

    const g = new GraphBuilder('lstm-step', { opset: 18 });
    const out = lstmOnnxStep(g, w, 'lstm', g.input('x', 'float32', [N, input]), {
      h: g.input('h', 'float32', [N, H]),
      c: g.input('c', 'float32', [N, H]),
    });
    g.output(out.h, 'h_next', 'float32', [N, H]);
    g.output(out.c, 'c_next', 'float32', [N, H]);
    const session = await ort.InferenceSession.create(g.toBytes());
    const res = await session.run({
      x: new ort.Tensor('float32', x, [N, input]),
      h: new ort.Tensor('float32', h, [N, H]),
      c: new ort.Tensor('float32', c, [N, H]),
    });
    assert.ok(maxDiff(next.h.dataSync(), res.h_next.data as Float32Array) < 1e-5);
    assert.ok(maxDiff(next.c.dataSync(), res.c_next.data as Float32Array) < 1e-5);
    await session.release();
    tf.dispose([next.h, next.c]);
    params.dispose();
  });
});

describe('residual CNN encoder', () => {
  test('the exported graph (α folded into the branch convolutions) gives the tfjs grid and pooled vector', async () => {
    const params = new ParamStore(4);
    const enc = new ConvEncoder(params, 'cnn', 32, [8, 16, 24]);
    assert.equal(enc.locations, 16);
    // Trained scales are non-zero; exercise the folding with distinct ones.
    [0.7, -1.3].forEach((a, i) => params.learnable.get(`cnn/stage${i + 1}/alpha`)!.assign(tf.tensor1d([a])));
    const pixels = randn(2 * 3 * 32 * 32);
    const { grid, pooled } = enc.encode(tf.tensor4d(pixels, [2, 3, 32, 32]), false);
    const g = new GraphBuilder('cnn', { opset: 18 });
    const out = enc.toOnnx(g, g.input('pixels', 'float32', ['batch', 3, 32, 32]));
    g.output(out.grid, 'grid', 'float32', ['batch', 16, 24]);
    g.output(out.pooled, 'pooled', 'float32', ['batch', 24]);
    const session = await ort.InferenceSession.create(g.toBytes());
    const res = await session.run({ pixels: new ort.Tensor('float32', pixels, [2, 3, 32, 32]) });
    const scale = Math.max(...Array.from(grid.dataSync(), Math.abs));
    assert.ok(maxDiff(grid.dataSync(), res.grid.data as Float32Array) <= 1e-5 * scale, 'grid');
    assert.ok(maxDiff(pooled.dataSync(), res.pooled.data as Float32Array) <= 1e-5 * scale, 'pooled');
    await session.release();
    tf.dispose([grid, pooled]);
    params.dispose();
  });

  test('an image size the stages cannot halve evenly is refused', () => {
    const params = new ParamStore(1);
    assert.throws(
      () => new ConvEncoder(params, 'cnn', 100, [8, 16, 32, 64]),
      /image size 100 must be a multiple of 16 for 4 stride-2 stages/,
    );
  });
});

describe('wasm convolution gradients (Conv2DBackpropFilter, Conv2DBackpropInput) against the cpu backend', () => {
  // [batch, height, width, in, out, kernel, stride, pad]: strides 1 and 2, 1×1 and 3×3, channel runs
  // shorter and longer than the im2col block-copy threshold (16), odd sizes.
  const cases = [
    [2, 9, 9, 3, 5, 3, 2, 1],
    [2, 8, 8, 4, 6, 3, 1, 1],
    [1, 7, 7, 20, 8, 1, 2, 0],
    [3, 16, 16, 17, 9, 3, 2, 1],
    [1, 6, 5, 2, 3, 3, 1, 0],
  ];
  for (const [B, H, W, ci, co, k, s, p] of cases) {
    test(`x [${B}, ${H}, ${W}, ${ci}], filter ${k}×${k}×${ci}→${co}, stride ${s}, pad ${p}`, async () => {
      const xs = randn(B * H * W * ci);
      const ws = randn(k * k * ci * co);
      const grads = () =>
        tf.tidy(() => {
          const x = tf.tensor4d(xs, [B, H, W, ci]);
          const w = tf.tensor4d(ws, [k, k, ci, co]);
          const y = tf.conv2d(x, w, s as 1 | 2, p);
          // A random weighting of the output, so every output position's gradient differs.
          const weights = tf.tensor(randnFixed(y.size), y.shape);
          return tf
            .grads((a: tf.Tensor, b: tf.Tensor) =>
              tf.sum(tf.mul(tf.conv2d(a as tf.Tensor4D, b as tf.Tensor4D, s as 1 | 2, p), weights)),
            )([x, w])
            .map((t) => t.dataSync() as Float32Array);
        });
      const onWasm = grads();
      await tf.setBackend('cpu');
      const onCpu = grads();
      await tf.setBackend('wasm');
      ['dx', 'dW'].forEach((name, i) => {
        const scale = Math.max(1, ...Array.from(onCpu[i], Math.abs));
        assert.ok(
          maxDiff(onWasm[i], onCpu[i]) <= 1e-5 * scale,
          `${name}: max |Δ| ${maxDiff(onWasm[i], onCpu[i])} (scale ${scale})`,
        );
      });
    });
  }
});

/** Deterministic weights for the gradient tests (the same on both backends). */
function randnFixed(n: number): Float32Array {
  const r = new SeededRandom(n, 'weights');
  return Float32Array.from({ length: n }, () => r.normal());
}

describe('caption batches', () => {
  const images: EncodedCaptionImage[] = Array.from({ length: 23 }, (_, i) => ({
    row: 100 + i,
    captions: Array.from({ length: i === 5 ? 9 : 1 + (i % 5) }, (_, c) =>
      Int32Array.from({ length: 1 + ((i + c) % 4) }, (_, t) => 4 + ((i + c + t) % 10)),
    ),
  }));

  test('every image once per epoch, whole, in batches of at most maxCaptions captions (an image with more alone)', () => {
    const plan = planCaptionBatches(images, { seed: 1, maxCaptions: 8 }, 0);
    const seen = plan.flatMap((b) => Array.from(b)).sort((a, b) => a - b);
    assert.deepEqual(
      seen,
      images.map((_, i) => i),
    );
    for (const batch of plan) {
      const n = Array.from(batch).reduce((sum, i) => sum + images[i].captions.length, 0);
      assert.ok(n <= 8 || batch.length === 1, `batch of ${n} captions`);
    }
    assert.deepEqual(planCaptionBatches(images, { seed: 1, maxCaptions: 8 }, 0), plan, 'not deterministic');
    assert.notDeepEqual(planCaptionBatches(images, { seed: 1, maxCaptions: 8 }, 1), plan, 'the same order every epoch');
  });

  test("a batch: one row per caption, <s> y / y </s> with a mask, image rows shared by an image's captions", () => {
    const source = {
      shape: [2],
      read: (rows: ArrayLike<number>) => Float32Array.from(Array.from(rows).flatMap((r) => [r, -r])),
    };
    const batch = makeCaptionBatch(images, [2, 0], source);
    const caps = [...images[2].captions, ...images[0].captions];
    assert.equal(batch.B, caps.length);
    assert.equal(batch.imageCount, 2);
    assert.deepEqual(Array.from(batch.images), [102, -102, 100, -100]);
    assert.deepEqual(Array.from(batch.imageRows), [
      ...images[2].captions.map(() => 0),
      ...images[0].captions.map(() => 1),
    ]);
    assert.equal(batch.T, Math.max(...caps.map((c) => c.length)) + 1);
    caps.forEach((c, b) => {
      const row = (a: ArrayLike<number>) => Array.from(a).slice(b * batch.T, (b + 1) * batch.T);
      assert.deepEqual(row(batch.tgtIn).slice(0, c.length + 1), [2, ...c]);
      assert.deepEqual(row(batch.tgtOut).slice(0, c.length + 1), [...c, 3]);
      assert.equal(
        row(batch.tgtMask).reduce((a, m) => a + m, 0),
        c.length + 1,
      );
    });
    assert.equal(
      batch.tokens,
      caps.reduce((n, c) => n + c.length + 1, 0),
    );
  });
});
