/**
 * layerNormOnnx (models/layers/layer-norm.ts) against the tfjs layer norm: as opset 17's LayerNormalization kernel
 * (opset ≥ 17, what exports use) and as the ops it is written with below opset 17, in onnxruntime-node and -web.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { layerNormOnnx, LAYER_NORM_EPS, layerNormOps, type LayerNormWeights } from '../models/layers/layer-norm.ts';
import { initBackend } from '../train/backend/select.ts';
import { runOrt, runOrtWeb, type Feed } from './helpers/onnx-check.ts';
import { uniformTensors } from './helpers/random-tensors.ts';

const random = uniformTensors(41, 'layer-norm-onnx');

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
});

test('layerNormOnnx gives the tfjs layer norm as the LayerNormalization kernel (opset 18) and as ops (opset 16)', async () => {
  const d = 24;
  const w: LayerNormWeights = {
    name: 'ln',
    gamma: tf.variable(random([d], 1.5)),
    beta: tf.variable(random([d], 0.5)),
  };
  const x = random([3, 5, d], 4);
  const expected = layerNormOps(x, w.gamma, w.beta, LAYER_NORM_EPS)[0]!.dataSync();
  const feeds: Record<string, Feed> = { x: { dims: x.shape, data: x.dataSync() as Float32Array } };
  for (const opset of [16, 18]) {
    const g = new GraphBuilder('layer-norm', { opset });
    g.output(layerNormOnnx(g, w, g.input('x', 'float32', ['batch', 'time', d])), 'y', 'float32', ['batch', 'time', d]);
    const ops = new Set(g.toGraphProto().node.map((n) => n.op_type));
    assert.equal(ops.has('LayerNormalization'), opset >= 17, `opset ${opset}: ${[...ops].join(', ')}`);
    for (const run of [runOrt, runOrtWeb]) {
      const y = (await run(g.toBytes(), feeds)).y!.data as Float32Array;
      let worst = 0;
      for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(expected[i]! - y[i]!));
      assert.ok(worst < 1e-5, `opset ${opset}, ${run.name}: max |Δ| ${worst}`);
    }
  }
});
