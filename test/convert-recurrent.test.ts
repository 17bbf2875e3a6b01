/**
 * `frost convert` for recurrent layers: SimpleRNN, GRU, LSTM
 * (return_sequences, return_state, go_backwards) and Bidirectional, against
 * `model.predict` (or, for the GRU reset_after variant tfjs cannot build, the
 * Keras formula). Random biases make every gate matter, so a gate-order or
 * bias-layout mistake fails the comparison. See helpers/convert-harness.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { IFCO_TO_IOFC } from '../export/convert/layers/recurrent-cells.ts';
import type { LayersModelArtifacts } from '../export/convert/index.ts';
import { reorderBlocks } from '../export/convert/weight-layout.ts';
import {
  apply,
  assertMatches,
  branches,
  convertChecked,
  layerJson,
  modelInputs,
  predict,
  prepare,
  randomInput,
  randoms,
  roundTrip,
  setUpConvertTests,
} from './helpers/convert-harness.ts';

setUpConvertTests();

describe('LSTM', () => {
  test('Porting note: tfjs gate blocks i,f,c,o are reordered to ONNX i,o,f,c', () => {
    // Kernel [1, 4·2] whose columns name their gate: i i f f c c o o.
    const kernel = { shape: [1, 8], data: Float32Array.from([1, 1, 2, 2, 3, 3, 4, 4]) };
    assert.deepEqual([...reorderBlocks(kernel, IFCO_TO_IOFC).data], [1, 1, 4, 4, 2, 2, 3, 3]);
  });

  test('return_sequences, last output, return_state; sigmoid and tfjs-default hard_sigmoid gates; linear and relu cell activations', async () => {
    const model = branches(
      [5, 3],
      [
        (x) => apply(tf.layers.lstm({ units: 4, returnSequences: true, recurrentActivation: 'sigmoid' }), x),
        (x) => apply(tf.layers.lstm({ units: 3 }), x), // hard_sigmoid gates
        (x) => apply(tf.layers.lstm({ units: 2, activation: 'linear', returnSequences: true }), x), // Affine after HardSigmoid: alpha/beta order
        (x) => apply(tf.layers.lstm({ units: 2, activation: 'relu', useBias: false }), x),
      ],
    );
    await roundTrip(model);
  });

  test('return_state gives [output, h, c]; go_backwards with return_sequences', async () => {
    const x = tf.input({ shape: [6, 2] });
    const [y, h, c] = tf.layers
      .lstm({ units: 3, returnState: true, returnSequences: true })
      .apply(x) as tf.SymbolicTensor[];
    const back = apply(tf.layers.lstm({ units: 2, goBackwards: true, returnSequences: true }), x);
    const backLast = apply(tf.layers.lstm({ units: 2, goBackwards: true }), x);
    await roundTrip(tf.model({ inputs: x, outputs: [y!, h!, c!, back, backLast] }));
  });

  test('Embedding → LSTM → Dense over a dynamic sequence length', async () => {
    const ids = tf.input({ shape: [null], dtype: 'int32' });
    const seq = apply(
      tf.layers.lstm({ units: 4, returnSequences: true }),
      apply(tf.layers.embedding({ inputDim: 12, outputDim: 3 }), ids),
    );
    const model = tf.model({ inputs: ids, outputs: apply(tf.layers.dense({ units: 5, activation: 'softmax' }), seq) });
    const result = convertChecked(await prepare(model));
    const [batch, time] = result.inputs[0]!.dims;
    assert.equal(batch, 'batch');
    assert.equal(typeof time, 'string', 'the time dim stays symbolic');
    for (const steps of [2, 7]) {
      const inputs = [randomInput([null, steps], 2, steps, 12)];
      await assertMatches(result, inputs, predict(model, inputs));
    }
  });
});

/** Rebuilds artifacts with the weight `name` replaced (new shape and data), for layouts tfjs cannot produce. */
function replaceWeight(
  artifacts: LayersModelArtifacts,
  name: string,
  shape: number[],
  data: Float32Array,
): LayersModelArtifacts {
  const bytes =
    artifacts.weightData instanceof Uint8Array ? artifacts.weightData : new Uint8Array(artifacts.weightData);
  const parts: Uint8Array[] = [];
  let offset = 0;
  const weightSpecs = artifacts.weightSpecs.map((spec) => {
    const size = spec.shape.reduce((a, b) => a * b, 1) * 4;
    parts.push(spec.name === name ? new Uint8Array(data.buffer.slice(0)) : bytes.slice(offset, offset + size));
    offset += size;
    return spec.name === name ? { ...spec, shape } : spec;
  });
  const weightData = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (weightData.set(p, at), at + p.length), 0);
  return { ...artifacts, weightSpecs, weightData };
}

describe('GRU', () => {
  test('reset_after=false (tfjs): return_sequences, last output, return_state, go_backwards', async () => {
    const x = tf.input({ shape: [5, 3] });
    const [y, h] = tf.layers
      .gru({ units: 4, returnSequences: true, returnState: true })
      .apply(x) as tf.SymbolicTensor[];
    const outputs = [
      y!,
      h!,
      apply(tf.layers.gru({ units: 3, recurrentActivation: 'sigmoid' }), x),
      apply(tf.layers.gru({ units: 2, goBackwards: true, returnSequences: true }), x),
      apply(tf.layers.gru({ units: 2, useBias: false, goBackwards: true }), x),
    ];
    await roundTrip(tf.model({ inputs: x, outputs }));
  });

  test('Porting note: reset_after=true (Keras) → linear_before_reset=1 with bias [2, 3H] = [Wb; Rb], against the Keras formula', async () => {
    const units = 3;
    const model = branches(
      [4, 2],
      [(x) => apply(tf.layers.gru({ units, returnSequences: true, recurrentActivation: 'sigmoid', name: 'gru' }), x)],
    );
    const prepared = await prepare(model);
    const config = layerJson(prepared, 'gru').config;
    config.reset_after = true;
    const bias = randoms(99, 2 * 3 * units, -0.6, 0.6);
    const biasName = prepared.weightSpecs.find((s) => s.name.endsWith('/bias'))!.name;
    const result = convertChecked(replaceWeight(prepared, biasName, [2, 3 * units], bias));
    const [kernel, recurrent] = model.getLayer('gru').getWeights() as tf.Tensor2D[];
    const [x] = modelInputs(model, 5, 2);
    // Keras GRUCell, reset_after=True: blocks z, r, h; the reset gate scales h·U_h + rb_h.
    const [b, rb] = tf.split(tf.tensor(bias, [2, 3 * units]), 2).map((t) => t.reshape([3 * units]));
    let h = tf.zeros([2, units]);
    const steps: tf.Tensor[] = [];
    for (const xt of tf.unstack(x!, 1)) {
      const [xz, xr, xh] = tf.split(xt.matMul(kernel!).add(b!), 3, 1);
      const [hz, hr, hh] = tf.split(h.matMul(recurrent!).add(rb!), 3, 1);
      const z = xz!.add(hz!).sigmoid();
      const r = xr!.add(hr!).sigmoid();
      const candidate = xh!.add(r.mul(hh!)).tanh();
      h = z.mul(h).add(tf.scalar(1).sub(z).mul(candidate));
      steps.push(h);
    }
    await assertMatches(result, [x!], [tf.stack(steps, 1)]);
  });
});

describe('SimpleRNN', () => {
  test('tanh, relu and linear cells; go_backwards; return_state', async () => {
    const x = tf.input({ shape: [4, 3] });
    const [y, h] = tf.layers.simpleRNN({ units: 3, returnState: true }).apply(x) as tf.SymbolicTensor[];
    const outputs = [
      y!,
      h!,
      apply(tf.layers.simpleRNN({ units: 2, activation: 'relu', returnSequences: true }), x),
      apply(tf.layers.simpleRNN({ units: 2, activation: 'linear', goBackwards: true, returnSequences: true }), x),
    ];
    await roundTrip(tf.model({ inputs: x, outputs }));
  });
});

describe('Bidirectional', () => {
  test('merge modes concat, sum, mul, ave over LSTM, GRU and SimpleRNN; sequences and last outputs', async () => {
    const bi = (layer: tf.RNN, mergeMode?: 'concat' | 'sum' | 'mul' | 'ave') => (x: tf.SymbolicTensor) =>
      apply(tf.layers.bidirectional({ layer, mergeMode }), x);
    const model = branches(
      [5, 3],
      [
        bi(tf.layers.lstm({ units: 3, returnSequences: true }) as tf.RNN),
        bi(tf.layers.gru({ units: 2, recurrentActivation: 'sigmoid' }) as tf.RNN, 'sum'),
        bi(tf.layers.simpleRNN({ units: 2, returnSequences: true }) as tf.RNN, 'ave'),
        bi(tf.layers.lstm({ units: 2 }) as tf.RNN, 'mul'),
        bi(tf.layers.gru({ units: 2, returnSequences: true }) as tf.RNN, 'concat'),
      ],
    );
    await roundTrip(model);
  });

  test('merge_mode null gives [forward, backward]; return_state appends [h_f, c_f, h_b, c_b]', async () => {
    const x = tf.input({ shape: [4, 3] });
    const split = tf.layers
      .bidirectional({ layer: tf.layers.gru({ units: 2, returnSequences: true }) as tf.RNN, mergeMode: null as never })
      .apply(x) as tf.SymbolicTensor[];
    const states = tf.layers
      .bidirectional({ layer: tf.layers.lstm({ units: 2, returnState: true }) as tf.RNN })
      .apply(x) as tf.SymbolicTensor[];
    assert.equal(split.length, 2);
    assert.equal(states.length, 5);
    await roundTrip(tf.model({ inputs: x, outputs: [...split, ...states] }));
  });

  test('stacked: Embedding → Bidirectional LSTM (sequences) → Bidirectional GRU → Dense', async () => {
    const model = tf.sequential({
      layers: [
        tf.layers.embedding({ inputDim: 20, outputDim: 4, inputLength: 6 }),
        tf.layers.bidirectional({ layer: tf.layers.lstm({ units: 3, returnSequences: true }) as tf.RNN }),
        tf.layers.bidirectional({ layer: tf.layers.gru({ units: 2 }) as tf.RNN }),
        tf.layers.dense({ units: 3, activation: 'softmax' }),
      ],
    });
    const result = convertChecked(await prepare(model));
    // A Sequential model's input is float32; Embedding truncates the ids.
    const inputs = [randomInput([null, 6], 3, 4, 20).cast('float32')];
    await assertMatches(result, inputs, predict(model, inputs));
  });
});
