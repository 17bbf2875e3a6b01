/**
 * The ONNX of the lightweight/dynamic convolution (models/layers/dynamic-conv-onnx.ts) against its tfjs functions
 * (models/layers/dynamic-conv.ts), in onnxruntime-node: the whole sequence (one kernel per head or per position,
 * a dynamic sequence length, kernels wider than the sentence, K = 1, even K) and the decoding step with its window.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { tensorValue } from '../models/onnx-values.ts';
import { dynamicConvOnnx, dynamicConvStepOnnx, type DynamicConvOnnxShape } from '../models/layers/dynamic-conv-onnx.ts';
import { dynamicConv, dynamicConvStep } from '../models/layers/dynamic-conv.ts';
import { initBackend } from '../train/backend/select.ts';
import { runOrt, runOrtWeb, type Feed } from './helpers/onnx-check.ts';
import { uniformTensors } from './helpers/random-tensors.ts';

const TOLERANCE = 1e-5;
const random = uniformTensors(38, 'dynamic-conv-onnx');

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
});

function feed(t: tf.Tensor): Feed {
  return { dims: t.shape, data: t.dataSync() as Float32Array };
}

function maxDiff(expected: tf.Tensor | Float32Array, actual: Float32Array): number {
  const e = expected instanceof Float32Array ? expected : expected.dataSync();
  assert.equal(actual.length, e.length);
  let worst = 0;
  for (let i = 0; i < e.length; i++) worst = Math.max(worst, Math.abs(e[i]! - actual[i]!));
  assert.ok(Number.isFinite(worst), 'non-finite values');
  return worst;
}

/** Weights [H, K] or [B, T, H, K] (or [N, H, K] for a step) as the models use them: softmax over K. */
function kernelWeights(shape: number[]): tf.Tensor {
  return tf.softmax(random(shape, 2));
}

/** Runs the whole-sequence graph on x (a dynamic batch and length) and returns y. */
async function runWhole(x: tf.Tensor3D, w: tf.Tensor, heads: number, padLeft: number): Promise<Float32Array> {
  const [, , C] = x.shape;
  const K = w.shape[w.rank - 1]!;
  const shape: DynamicConvOnnxShape = { channels: C, heads, width: K, dynamic: w.rank === 4 };
  const g = new GraphBuilder('dynamic-conv');
  const xIn = g.input('x', 'float32', ['batch', 'time', C]);
  const wIn = shape.dynamic ? g.input('w', 'float32', ['batch', 'time', heads, K]) : g.initializer('w', tensorValue(w));
  g.output(dynamicConvOnnx(g, xIn, wIn, shape, padLeft), 'y', 'float32', ['batch', 'time', C]);
  const feeds: Record<string, Feed> = { x: feed(x) };
  if (shape.dynamic) feeds.w = feed(w);
  return (await runOrt(g.toBytes(), feeds)).y!.data as Float32Array;
}

describe('dynamic convolution ONNX, whole sequence', () => {
  // [B, T, C, H, K, padLeft]: centred and causal, K > T, T = 1, K = 1, even K (both paddings).
  const cases: [number, number, number, number, number, number][] = [
    [2, 7, 8, 2, 3, 1],
    [2, 7, 8, 2, 3, 2],
    [3, 2, 6, 3, 5, 2],
    [2, 3, 4, 1, 7, 6],
    [2, 1, 8, 4, 3, 1],
    [1, 1, 4, 2, 4, 3],
    [2, 5, 8, 2, 1, 0],
    [2, 6, 8, 4, 4, 1],
    [2, 6, 8, 4, 4, 2],
  ];
  for (const [B, T, C, H, K, padLeft] of cases) {
    for (const dynamic of [false, true]) {
      const label = `B=${B} T=${T} C=${C} H=${H} K=${K} padLeft=${padLeft}, ${dynamic ? '[B,T,H,K]' : '[H,K]'} weights`;
      test(label, async () => {
        const x = random([B, T, C]) as tf.Tensor3D;
        const w = kernelWeights(dynamic ? [B, T, H, K] : [H, K]);
        const expected = dynamicConv(x, w, padLeft);
        const diff = maxDiff(expected, await runWhole(x, w, H, padLeft));
        assert.ok(diff <= TOLERANCE, `${diff}`);
        tf.dispose([x, w, expected]);
      });
    }
  }

  test('one graph serves every sequence length (the time dim is dynamic)', async () => {
    const w = kernelWeights([2, 5]);
    const g = new GraphBuilder('dynamic-conv');
    const shape = { channels: 4, heads: 2, width: 5, dynamic: false };
    const y = dynamicConvOnnx(
      g,
      g.input('x', 'float32', ['batch', 'time', 4]),
      g.initializer('w', tensorValue(w)),
      shape,
      2,
    );
    g.output(y, 'y', 'float32', ['batch', 'time', 4]);
    const bytes = g.toBytes();
    for (const T of [1, 3, 11]) {
      const x = random([1, T, 4]) as tf.Tensor3D;
      const expected = dynamicConv(x, w, 2);
      const out = await runOrt(bytes, { x: feed(x) });
      assert.ok(maxDiff(expected, out.y!.data as Float32Array) <= TOLERANCE, `T=${T}`);
      tf.dispose([x, expected]);
    }
    w.dispose();
  });

  test('onnxruntime-web (the browser runtime) computes both forms as onnxruntime-node does', async () => {
    const x = random([2, 5, 8]) as tf.Tensor3D;
    for (const dynamic of [false, true]) {
      const w = kernelWeights(dynamic ? [2, 5, 2, 3] : [2, 3]);
      const g = new GraphBuilder('dynamic-conv');
      const shape = { channels: 8, heads: 2, width: 3, dynamic };
      const wIn = dynamic ? g.input('w', 'float32', ['batch', 'time', 2, 3]) : g.initializer('w', tensorValue(w));
      g.output(dynamicConvOnnx(g, g.input('x', 'float32', ['batch', 'time', 8]), wIn, shape, 1), 'y', 'float32', [
        'batch',
        'time',
        8,
      ]);
      const feeds: Record<string, Feed> = { x: feed(x), ...(dynamic ? { w: feed(w) } : {}) };
      const [node, web] = [await runOrt(g.toBytes(), feeds), await runOrtWeb(g.toBytes(), feeds)];
      const diff = maxDiff(node.y!.data as Float32Array, web.y!.data as Float32Array);
      assert.ok(diff <= TOLERANCE, `${dynamic ? 'dynamic' : 'lightweight'}: web vs node ${diff}`);
      w.dispose();
    }
    x.dispose();
  });

  test('a padding outside [0, K) is refused', () => {
    const g = new GraphBuilder('dynamic-conv');
    const x = g.input('x', 'float32', ['batch', 'time', 4]);
    const w = g.input('w', 'float32', [2, 3]);
    assert.throws(() => dynamicConvOnnx(g, x, w, { channels: 4, heads: 2, width: 3, dynamic: false }, 3), /padLeft/);
  });
});

describe('dynamic convolution ONNX, one decoding step', () => {
  // [N, C, H, K]: a window of K − 1 inputs; K = 1 (no window); even K.
  const cases: [number, number, number, number][] = [
    [3, 8, 2, 3],
    [2, 4, 1, 1],
    [2, 8, 4, 4],
    [1, 6, 3, 7],
  ];
  for (const [N, C, H, K] of cases) {
    for (const dynamic of [false, true]) {
      test(`N=${N} C=${C} H=${H} K=${K}, ${dynamic ? '[N,H,K]' : '[H,K]'} weights: y and the next window`, async () => {
        const window = K > 1 ? (random([N, K - 1, C]) as tf.Tensor3D) : undefined;
        const x = random([N, C]) as tf.Tensor2D;
        const w = kernelWeights(dynamic ? [N, H, K] : [H, K]);
        const expected = dynamicConvStep(window, x, w);
        const shape: DynamicConvOnnxShape = { channels: C, heads: H, width: K, dynamic };
        const g = new GraphBuilder('dynamic-conv-step');
        const windowIn = window && g.input('window', 'float32', ['batch', K - 1, C]);
        const wIn = dynamic ? g.input('w', 'float32', ['batch', H, K]) : g.initializer('w', tensorValue(w));
        const out = dynamicConvStepOnnx(g, windowIn, g.input('x', 'float32', ['batch', C]), wIn, shape);
        g.output(out.y, 'y', 'float32', ['batch', C]);
        assert.equal(out.window === undefined, K === 1);
        if (out.window) g.output(out.window, 'next_window', 'float32', ['batch', K - 1, C]);
        const feeds: Record<string, Feed> = { x: feed(x) };
        if (window) feeds.window = feed(window);
        if (dynamic) feeds.w = feed(w);
        const result = await runOrt(g.toBytes(), feeds);
        assert.ok(maxDiff(expected.y, result.y!.data as Float32Array) <= TOLERANCE, 'y');
        if (expected.window) assert.equal(maxDiff(expected.window, result.next_window!.data as Float32Array), 0);
        tf.dispose([x, w, expected.y, ...(window ? [window] : []), ...(expected.window ? [expected.window] : [])]);
      });
    }
  }

  test('steps fed their own windows equal the causal whole-sequence convolution', async () => {
    const [C, H, K, T] = [6, 3, 4, 6];
    const x = random([2, T, C]) as tf.Tensor3D;
    const w = kernelWeights([H, K]);
    const expected = dynamicConv(x, w, K - 1);
    const g = new GraphBuilder('dynamic-conv-step');
    const shape = { channels: C, heads: H, width: K, dynamic: false };
    const out = dynamicConvStepOnnx(
      g,
      g.input('window', 'float32', ['batch', K - 1, C]),
      g.input('x', 'float32', ['batch', C]),
      g.initializer('w', tensorValue(w)),
      shape,
    );
    g.output(out.y, 'y', 'float32', ['batch', C]);
    g.output(out.window!, 'next_window', 'float32', ['batch', K - 1, C]);
    const bytes = g.toBytes();
    let window: Feed = { dims: [2, K - 1, C], data: new Float32Array(2 * (K - 1) * C) };
    const ys: tf.Tensor[] = [];
    for (let t = 0; t < T; t++) {
      const xt = tf.squeeze(tf.slice(x, [0, t, 0], [2, 1, C]), [1]);
      const result = await runOrt(bytes, { window, x: feed(xt) });
      ys.push(tf.tensor(result.y!.data as Float32Array, [2, 1, C]));
      window = { dims: result.next_window!.dims, data: result.next_window!.data };
      xt.dispose();
    }
    const stepped = tf.concat(ys, 1);
    assert.ok(maxDiff(expected, stepped.dataSync() as Float32Array) <= TOLERANCE);
    tf.dispose([x, w, expected, stepped, ...ys]);
  });
});
