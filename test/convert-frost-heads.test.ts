/**
 * `frost convert` on frost's own heads as tfjs custom layers (models/tfjs-layers/frost-heads.ts):
 * Dense → FrostFixedHead (fixed-uniform, fixed-l2) and Dense → FrostHadamardHead, saved to disk,
 * converted, checked, and run in onnxruntime-node against model.predict (helpers/convert-harness.ts).
 * The frozen matrices must be regenerated in the graph, never stored.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { streamKey, uniformMatrix } from '../core/random.ts';
import { decodeModel } from '../core/onnx/proto.ts';
import { UnsupportedLayersError, convertLayersModel, type ConvertResult } from '../export/convert/index.ts';
import { FrostFixedHead, FrostHadamardHead, frostFixedTargets } from '../models/tfjs-layers/frost-heads.ts';
import { checkModel } from './helpers/onnx-check.ts';
import { apply, assertMatches, modelInputs, predict, prepare, setUpConvertTests } from './helpers/convert-harness.ts';

setUpConvertTests();

const V = 50;
const D = 8;

/** Float initializers holding at least |V|·d values: a stored target matrix. */
function storedMatrices(bytes: Uint8Array): string[] {
  const graph = (
    decodeModel(bytes) as { graph: { initializer: { name: string; dims?: number[]; data_type?: number }[] } }
  ).graph;
  return graph.initializer
    .filter((t) => t.data_type === 1 && (t.dims ?? []).map(Number).reduce((a, b) => a * b, 1) >= V * D)
    .map((t) => `${t.name} [${(t.dims ?? []).join(', ')}]`);
}

/**
 * The harness' roundTrip, except for the checker: the installed onnx (opset ≤ 17) cannot check
 * BitwiseXor (new in opset 18), which the seeded matrix uses, so the checker skips those nodes
 * (as in export-frozen.test.ts) and onnxruntime validates them when it loads the model.
 */
async function roundTrip(model: tf.LayersModel, seed = 7): Promise<ConvertResult> {
  const result = convertLayersModel(await prepare(model, seed));
  const report = checkModel(result.bytes);
  assert.ok(
    report.unchecked.every((node) => node.startsWith('BitwiseXor(')),
    `unchecked: ${report.unchecked.join(', ')}`,
  );
  const inputs = modelInputs(model, seed);
  const expected = predict(model, inputs);
  await assertMatches(result, inputs, expected);
  tf.dispose([...inputs, ...expected]);
  return result;
}

/** Sequential: Dense(6 → d) then `head`. */
function withHead(head: tf.layers.Layer): tf.Sequential {
  const model = tf.sequential();
  model.add(tf.layers.dense({ units: D, inputShape: [6] }));
  model.add(head);
  return model;
}

describe('frost head layers', () => {
  test('fromConfig(getConfig()) round-trips; config holds exactly the args', () => {
    const fixed = new FrostFixedHead({ units: V, kind: 'fixed-uniform', seed: 11, limit: 3, name: 'fixed' });
    const l2 = new FrostFixedHead({ units: V, kind: 'fixed-l2', seed: 12, name: 'l2' });
    const hadamard = new FrostHadamardHead({ units: V, seed: 13, name: 'had' });
    const base = Object.keys(new (class extends tf.layers.Layer {})({ name: 'x' }).getConfig()); // name, trainable, dtype…
    const own = (c: tf.serialization.ConfigDict) =>
      Object.fromEntries(Object.entries(c).filter(([k]) => !base.includes(k)));
    assert.deepEqual(own(fixed.getConfig()), { units: V, kind: 'fixed-uniform', seed: 11, limit: 3 });
    assert.deepEqual(own(l2.getConfig()), { units: V, kind: 'fixed-l2', seed: 12 });
    assert.deepEqual(own(hadamard.getConfig()), { units: V, seed: 13 });
    for (const [cls, layer] of [
      [FrostFixedHead, fixed],
      [FrostFixedHead, l2],
      [FrostHadamardHead, hadamard],
    ] as const) {
      const again = cls.fromConfig(cls, layer.getConfig());
      assert.ok(again instanceof cls);
      assert.deepEqual(again.getConfig(), layer.getConfig());
    }
    assert.throws(() => new FrostFixedHead({ units: V, kind: 'fixed-l2', seed: 1, limit: 2 }), /limit/);
    assert.throws(() => new FrostFixedHead({ units: V, kind: 'nope' as 'fixed-l2', seed: 1 }), /kind/);
  });

  test('a fixed head scores against the same matrix as the frost head, and refuses rank 4', () => {
    const head = new FrostFixedHead({ units: V, kind: 'fixed-uniform', seed: 5, limit: 10 });
    const f = tf.eye(D); // logits of e_k are column k of targetsᵀ, i.e. targets[:, k]
    const got = (head.apply(f) as tf.Tensor).arraySync() as number[][];
    const targets = uniformMatrix(streamKey(5, 'fixed-uniform'), V, D, -10, 10);
    assert.deepEqual(frostFixedTargets('fixed-uniform', V, D, 5), targets);
    for (let k = 0; k < D; k++) for (let v = 0; v < V; v++) assert.equal(got[k]![v], targets[v * D + k]);
    assert.throws(
      () => new FrostFixedHead({ units: V, kind: 'fixed-l2', seed: 1 }).apply(tf.input({ shape: [2, 3, D] })),
      /\[batch, d\] or \[batch, time, d\]/,
    );
  });
});

describe('frost convert: frost heads', () => {
  for (const kind of ['fixed-uniform', 'fixed-l2'] as const) {
    test(`Dense → FrostFixedHead (${kind}): parity, checker, matrix regenerated`, async () => {
      const model = withHead(
        new FrostFixedHead({ units: V, kind, seed: 21, ...(kind === 'fixed-uniform' ? { limit: 2 } : {}) }),
      );
      assert.equal(model.layers[1]!.weights.length, 0, 'no weights');
      const result = await roundTrip(model);
      assert.deepEqual(result.outputs[0]!.dims, ['batch', V]);
      assert.deepEqual(storedMatrices(result.bytes), []);
    });
  }

  test('Dense → FrostHadamardHead: parity (scale read from the weights), checker, no stored matrix', async () => {
    const head = new FrostHadamardHead({ units: V, seed: 22 });
    const model = withHead(head);
    assert.deepEqual(
      head.trainableWeights.map((w) => w.shape),
      [[1]],
    );
    assert.ok(
      Math.abs((head.getWeights()[0]!.dataSync()[0] ?? 0) - 1 / Math.sqrt(V)) < 1e-7,
      'scale starts at 1/√units',
    );
    const result = await roundTrip(model); // roundTrip randomises scale, so a dropped weight would show
    assert.deepEqual(result.outputs[0]!.dims, ['batch', V]);
    assert.deepEqual(storedMatrices(result.bytes), []);
  });

  test('[batch, time, d] features through both heads (functional model)', async () => {
    const x = tf.input({ shape: [4, 6] });
    const f = apply(tf.layers.dense({ units: D }), x);
    const model = tf.model({
      inputs: x,
      outputs: [
        apply(new FrostFixedHead({ units: V, kind: 'fixed-l2', seed: 31 }), f),
        apply(new FrostHadamardHead({ units: V, seed: 32 }), f),
      ],
    });
    const result = await roundTrip(model);
    assert.deepEqual(
      result.outputs.map((o) => o.dims),
      [
        ['batch', 4, V],
        ['batch', 4, V],
      ],
    );
  });

  test('below opset 18 the fixed head is refused with a reason', async () => {
    const artifacts = await prepare(withHead(new FrostFixedHead({ units: V, kind: 'fixed-l2', seed: 1 })));
    assert.throws(
      () => convertLayersModel(artifacts, { opset: 17 }),
      (err: unknown) => err instanceof UnsupportedLayersError && /opset 18/.test(err.message),
    );
  });
});
