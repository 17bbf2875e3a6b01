/**
 * `frost convert`: tfjs LayersModels → ONNX, for the non-recurrent layers
 * (recurrent ones: convert-recurrent.test.ts), the CLI, weight decoding and
 * refusals. Each case builds a small tfjs model with random weights (biases
 * and BatchNorm statistics included, so a wrong layout cannot hide behind
 * zeros), saves it to disk, converts it, runs ONNX's checker and compares
 * onnxruntime-node with `model.predict` (see helpers/convert-harness.ts).
 * Layers are grouped into a few multi-output models to keep the file fast.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { Command } from 'commander';
import { registerConvert } from '../clients/cli/commands/convert.ts';
import { decodeModel } from '../core/onnx/proto.ts';
import { convertLayersModel, readModelFiles, UnsupportedLayersError } from '../export/convert/index.ts';
import { decodeWeights, LayerWeights, type Weight } from '../export/convert/weights.ts';
import { checkModel } from './helpers/onnx-check.ts';
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
  roundTrip,
  save,
  setUpConvertTests,
  tempPath,
} from './helpers/convert-harness.ts';

setUpConvertTests();

/** The decoded graph of a model. */
const graphOf = (bytes: Uint8Array) =>
  (decodeModel(bytes) as { graph: { node: { op_type: string }[]; initializer: { name: string }[] } }).graph;
const opTypes = (bytes: Uint8Array): string[] => graphOf(bytes).node.map((n) => n.op_type);

describe('core layers', () => {
  test('Dense with every activation, on rank-2 and rank-3 inputs (multi-output functional model)', async () => {
    const activations = [
      'linear',
      'relu',
      'relu6',
      'elu',
      'selu',
      'sigmoid',
      'hardSigmoid',
      'tanh',
      'softmax',
      'softplus',
      'softsign',
      'swish',
      'mish',
      'gelu',
      'gelu_new',
    ];
    const model = branches(
      [6],
      [
        ...activations.map(
          (activation) => (x: tf.SymbolicTensor) =>
            apply(tf.layers.dense({ units: 4, activation: activation as 'relu' }), x),
        ),
        (x) => apply(tf.layers.dense({ units: 3, useBias: false }), x),
        // rank 3: Dense acts on the last axis
        (x) =>
          apply(
            tf.layers.dense({ units: 2, activation: 'softmax' }),
            apply(tf.layers.reshape({ targetShape: [3, 2] }), x),
          ),
      ],
    );
    const result = await roundTrip(model);
    assert.equal(result.outputs.length, activations.length + 2);
    assert.deepEqual(result.outputs[0]!.dims, ['batch', 4]);
  });

  test('activation layers: Activation, ReLU (with max_value), LeakyReLU, ELU, ThresholdedReLU, Softmax(axis), PReLU', async () => {
    const model = branches(
      [4, 5],
      [
        (x) => apply(tf.layers.activation({ activation: 'tanh' }), x),
        (x) => apply(tf.layers.reLU({ maxValue: 0.5 }), x),
        (x) => apply(tf.layers.reLU({}), x),
        (x) => apply(tf.layers.leakyReLU({ alpha: 0.2 }), x),
        (x) => apply(tf.layers.elu({}), x),
        (x) => apply(tf.layers.thresholdedReLU({ theta: 0.3 }), x),
        (x) => apply(tf.layers.softmax({ axis: 2 }), x), // tfjs supports the last axis only
        (x) => apply(tf.layers.prelu({}), x),
      ],
    );
    await roundTrip(model);
  });

  test('Embedding (int32 and float ids), Dropout, Flatten, Reshape(-1), Permute, RepeatVector, TimeDistributed', async () => {
    const ids = tf.input({ shape: [5], dtype: 'int32' });
    const embedded = apply(tf.layers.embedding({ inputDim: 10, outputDim: 4 }), ids);
    const dropped = apply(tf.layers.dropout({ rate: 0.5 }), embedded);
    const flat = apply(tf.layers.flatten(), dropped);
    const reshaped = apply(tf.layers.reshape({ targetShape: [2, -1] }), flat);
    const permuted = apply(tf.layers.permute({ dims: [2, 1] }), dropped);
    const repeated = apply(tf.layers.repeatVector({ n: 3 }), apply(tf.layers.dense({ units: 2 }), flat));
    const perStep = apply(
      tf.layers.timeDistributed({ layer: tf.layers.dense({ units: 3, activation: 'relu' }) }),
      dropped,
    );
    const floatIds = tf.input({ shape: [2] });
    const fromFloat = apply(tf.layers.embedding({ inputDim: 10, outputDim: 3 }), floatIds);
    const model = tf.model({
      inputs: [ids, floatIds],
      outputs: [flat, reshaped, permuted, repeated, perStep, fromFloat],
    });
    const result = convertChecked(await prepare(model));
    assert.deepEqual(
      result.inputs.map((i) => i.dtype),
      ['int32', 'float32'],
    );
    // Float ids are whole numbers here: both sides truncate, but only whole ids mean anything.
    const inputs = [
      randomInput([null, 5], 2, 1, 10),
      tf.tensor([
        [1, 9],
        [0, 4],
      ]),
    ];
    await assertMatches(result, inputs, predict(model, inputs));
  });
});

describe('convolution and pooling layers', () => {
  test('Porting note (layout): NHWC Conv2D, DepthwiseConv2D, BatchNorm, pools, then Flatten → Dense in NHWC order', async () => {
    const model = tf.sequential({
      layers: [
        tf.layers.conv2d({
          inputShape: [9, 8, 3],
          filters: 4,
          kernelSize: 3,
          strides: 2,
          padding: 'same',
          activation: 'relu',
        }),
        tf.layers.depthwiseConv2d({ kernelSize: [2, 3], depthMultiplier: 2, padding: 'valid' }),
        tf.layers.batchNormalization({}),
        tf.layers.maxPooling2d({ poolSize: 2, strides: 1, padding: 'same' }),
        tf.layers.averagePooling2d({ poolSize: [2, 1], padding: 'valid' }),
        tf.layers.flatten(),
        tf.layers.dense({ units: 5, activation: 'softmax' }),
      ],
    });
    const result = await roundTrip(model);
    assert.equal(result.layers, 7);
  });

  test('Conv1D (dilated, strided, same), Max/AveragePooling1D, GlobalAverage/MaxPooling1D', async () => {
    const model = branches(
      [12, 3],
      [
        (x) => apply(tf.layers.conv1d({ filters: 4, kernelSize: 3, dilationRate: 2, activation: 'tanh' }), x),
        (x) =>
          apply(
            tf.layers.maxPooling1d({ poolSize: 3, strides: 2 }),
            apply(tf.layers.conv1d({ filters: 2, kernelSize: 2, strides: 2, padding: 'same' }), x),
          ),
        (x) => apply(tf.layers.averagePooling1d({ poolSize: 2, padding: 'same', strides: 3 }), x),
        (x) => apply(tf.layers.globalAveragePooling1d({}), x),
        (x) => apply(tf.layers.globalMaxPooling1d({}), x),
      ],
    );
    await roundTrip(model);
  });

  test("Conv1D padding 'causal' (Keras; tfjs cannot run it): left-pads (k - 1)·d, checked against pad + valid conv", async () => {
    const model = branches(
      [10, 3],
      [(x) => apply(tf.layers.conv1d({ filters: 2, kernelSize: 3, dilationRate: 2, name: 'causal' }), x)],
    );
    const artifacts = await prepare(model);
    layerJson(artifacts, 'causal').config.padding = 'causal';
    const result = convertChecked(artifacts);
    const [x] = modelInputs(model, 1);
    const [kernel, bias] = model.getLayer('causal').getWeights();
    const expected = tf
      .conv1d(
        tf.pad(x as tf.Tensor3D, [
          [0, 0],
          [4, 0],
          [0, 0],
        ]),
        kernel as tf.Tensor3D,
        1,
        'valid',
        'NWC',
        2,
      )
      .add(bias!);
    await assertMatches(result, [x!], [expected]);
  });

  test('SeparableConv2D, Conv3D, ZeroPadding2D, Cropping2D, UpSampling2D (nearest, bilinear), global 2-D pools, same-padded average pool', async () => {
    const model = branches(
      [6, 7, 2],
      [
        (x) =>
          apply(
            tf.layers.separableConv2d({
              filters: 3,
              kernelSize: 3,
              depthMultiplier: 2,
              padding: 'same',
              activation: 'relu',
            }),
            x,
          ),
        (x) =>
          apply(
            tf.layers.zeroPadding2d({
              padding: [
                [1, 2],
                [0, 1],
              ],
            }),
            x,
          ),
        (x) =>
          apply(
            tf.layers.cropping2D({
              cropping: [
                [1, 0],
                [2, 1],
              ],
            }),
            x,
          ),
        (x) => apply(tf.layers.upSampling2d({ size: [2, 3] }), x),
        (x) => apply(tf.layers.upSampling2d({ size: [2, 2], interpolation: 'bilinear' }), x),
        (x) => apply(tf.layers.globalAveragePooling2d({}), x),
        (x) => apply(tf.layers.globalMaxPooling2d({}), x),
        (x) => apply(tf.layers.averagePooling2d({ poolSize: 3, strides: 2, padding: 'same' }), x),
        (x) =>
          apply(
            tf.layers.conv3d({ filters: 2, kernelSize: [2, 2, 1] }),
            apply(tf.layers.reshape({ targetShape: [6, 7, 2, 1] }), x),
          ),
      ],
    );
    await roundTrip(model);
  });

  test('channels_first Conv2D and MaxPooling2D (no transposes), then a channels_first Flatten', async () => {
    const model = tf.sequential({
      layers: [
        tf.layers.conv2d({ inputShape: [2, 6, 5], filters: 3, kernelSize: 2, dataFormat: 'channelsFirst' }),
        tf.layers.maxPooling2d({ poolSize: 2, dataFormat: 'channelsFirst' }),
        tf.layers.flatten({ dataFormat: 'channelsFirst' } as never),
        tf.layers.dense({ units: 2 }),
      ],
    });
    await roundTrip(model);
  });
});

describe('normalization and merge layers', () => {
  test('BatchNormalization (last axis), LayerNormalization (last axis, trailing axes, a middle axis)', async () => {
    const model = branches(
      [4, 6],
      [
        (x) => apply(tf.layers.batchNormalization({ epsilon: 0.01 }), x),
        (x) => apply(tf.layers.batchNormalization({ center: false, scale: false }), x),
        (x) => apply(tf.layers.layerNormalization({}), x),
        (x) => apply(tf.layers.layerNormalization({ axis: [1, 2], scale: false }), x),
        (x) => apply(tf.layers.layerNormalization({ axis: 1 }), x),
      ],
    );
    await roundTrip(model);
  });

  test('BatchNormalization over axis 1 matches the Keras formula (tfjs cpu/wasm kernels broadcast it wrongly)', async () => {
    const model = branches([4, 6], [(x) => apply(tf.layers.batchNormalization({ axis: 1, name: 'bn_axis1' }), x)]);
    const result = convertChecked(await prepare(model));
    const [gamma, beta, mean, variance] = model
      .getLayer('bn_axis1')
      .getWeights()
      .map((w) => w.reshape([1, 4, 1]));
    const [x] = modelInputs(model, 2);
    // y = (x - mean) / √(var + ε) · γ + β, broadcast along axis 1
    const expected = x!.sub(mean!).div(variance!.add(1e-3).sqrt()).mul(gamma!).add(beta!);
    await assertMatches(result, [x!], [expected]);
  });

  test('LayerNormalization as one op at opset 17 and spelled out at opset 13', async () => {
    for (const opset of [17, 13]) {
      const model = branches([5], [(x) => apply(tf.layers.layerNormalization({ epsilon: 1e-5 }), x)]);
      const result = await roundTrip(model, { opset });
      assert.equal(opTypes(result.bytes).includes('LayerNormalization'), opset === 17);
    }
  });

  test('two inputs: Concatenate, Add, Multiply, Average, Maximum, Minimum; a shared layer called twice', async () => {
    const a = tf.input({ shape: [3, 4] });
    const b = tf.input({ shape: [3, 4] });
    const shared = tf.layers.dense({ units: 4, activation: 'tanh' });
    const sa = apply(shared, a);
    const sb = apply(shared, b);
    const outputs = [
      apply(tf.layers.concatenate({}), [sa, sb]),
      apply(tf.layers.concatenate({ axis: 1 }), [a, sb]),
      apply(tf.layers.add({}), [sa, sb, a]),
      apply(tf.layers.multiply({}), [sa, sb]),
      apply(tf.layers.average({}), [a, sb]),
      apply(tf.layers.maximum({}), [sa, b]),
      apply(tf.layers.minimum({}), [a, sb]),
    ];
    const model = tf.model({ inputs: [a, b], outputs });
    const result = await roundTrip(model);
    assert.equal(result.inputs.length, 2);
    // The shared Dense is stored once.
    assert.deepEqual(
      graphOf(result.bytes)
        .initializer.map((t) => t.name)
        .filter((n) => n.startsWith(shared.name)),
      [`${shared.name}/kernel`, `${shared.name}/bias`],
    );
  });

  test('Subtract (Keras; not in tfjs): y = a - b', async () => {
    const a = tf.input({ shape: [3] });
    const b = tf.input({ shape: [3] });
    const model = tf.model({ inputs: [a, b], outputs: apply(tf.layers.add({ name: 'sub' }), [a, b]) });
    const artifacts = await prepare(model);
    layerJson(artifacts, 'sub').class_name = 'Subtract';
    const result = convertChecked(artifacts);
    const inputs = modelInputs(model, 3);
    await assertMatches(result, inputs, [inputs[0]!.sub(inputs[1]!)]);
  });
});

describe('frost convert (CLI)', () => {
  test('writes the .onnx file and prints a one-line summary; --batch fixes the batch dim', async () => {
    const model = tf.sequential({
      layers: [tf.layers.dense({ inputShape: [3], units: 2, activation: 'relu' }), tf.layers.dense({ units: 1 })],
    });
    const json = await save(model);
    const out = tempPath('cli.onnx');
    const program = new Command().exitOverride();
    registerConvert(program);
    const printed: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string | Uint8Array) =>
      printed.push(String(chunk)) > 0) as typeof process.stdout.write;
    try {
      await program.parseAsync(['convert', json, '--out', out, '--batch', '4', '--opset', '17'], { from: 'user' });
    } finally {
      process.stdout.write = write;
    }
    const report = checkModel(new Uint8Array(readFileSync(out)));
    assert.equal(report.modelOpset, 17);
    assert.equal(printed.length, 1);
    assert.match(printed[0]!, /^converted 2 layers → \d+ ONNX ops, \d+ bytes: .*cli\.onnx\n$/);
    assert.deepEqual(convertLayersModel(await readModelFiles(json), { batch: 4 }).inputs[0]!.dims, [4, 3]);
  });
});

test('quantised weights (uint8, uint16, float16) decode as tfjs does', () => {
  const data = new Uint8Array([0, 255, 1, 0, 0xff, 0xff, 0x00, 0x3c, 0x00, 0xc0]);
  const weights = decodeWeights(
    [
      { name: 'a', shape: [2], dtype: 'float32', quantization: { dtype: 'uint8', scale: 0.5, min: -1 } },
      { name: 'b', shape: [2], dtype: 'float32', quantization: { dtype: 'uint16', scale: 2, min: 1 } },
      { name: 'c', shape: [2], dtype: 'float32', quantization: { dtype: 'float16' } },
    ],
    data,
  );
  assert.deepEqual([...weights.get('a')!.data], [-1, 126.5]);
  assert.deepEqual([...weights.get('b')!.data], [3, 131071]);
  assert.deepEqual([...weights.get('c')!.data], [1, -2]);
});

test('weights are found by layer prefix and last name segment (tfjs and Keras-Python names)', () => {
  const w = (name: string, n: number): [string, Weight] => [
    name,
    { name, shape: [n], data: new Float32Array(n).fill(n) },
  ];
  const all = new Map<string, Weight>([
    w('lstm/lstm_cell/kernel:0', 1),
    w('lstm_1/kernel', 2),
    w('bidirectional/forward_lstm/lstm_cell/kernel', 3),
    w('bidirectional/backward_lstm/lstm_cell/kernel', 4),
  ]);
  assert.equal(new LayerWeights(all, ['lstm/']).get('kernel').data[0], 1);
  assert.equal(new LayerWeights(all, ['lstm_1/']).get('kernel').data[0], 2);
  const bi = new LayerWeights(all, ['bidirectional/']);
  assert.equal(bi.under('forward_').get('kernel').data[0], 3);
  assert.equal(bi.under('backward_').get('kernel').data[0], 4);
  assert.throws(() => bi.get('kernel'), /2 weight 'kernel'/);
  assert.throws(
    () => new LayerWeights(all, ['lstm/']).get('bias'),
    /no weight 'bias' under lstm\/ \(has: lstm\/lstm_cell\/kernel:0\)/,
  );
});

test('every unsupported layer is refused at once, by name and class, never dropped', async () => {
  const x = tf.input({ shape: [4, 4, 2] });
  const deconv = apply(tf.layers.conv2dTranspose({ filters: 2, kernelSize: 2, name: 'up' }), x);
  // A supported layer behind a refused one is skipped, not reported: it is not at fault.
  const fine = apply(tf.layers.dense({ units: 3, name: 'fine' }), apply(tf.layers.flatten({}), deconv));
  const ids = tf.input({ shape: [3] });
  const masked = apply(
    tf.layers.embedding({ inputDim: 5, outputDim: 2, maskZero: true, name: 'masked_embedding' }),
    ids,
  );
  const masking = apply(tf.layers.masking({ name: 'masking' }), apply(tf.layers.flatten({}), x));
  const model = tf.model({ inputs: [x, ids], outputs: [fine, masked, masking] });
  const artifacts = await prepare(model);
  assert.throws(
    () => convertLayersModel(artifacts),
    (err: unknown) => {
      assert.ok(err instanceof UnsupportedLayersError);
      assert.deepEqual(err.layers.map((l) => `${l.name} (${l.className})`).sort(), [
        'masked_embedding (Embedding)',
        'masking (Masking)',
        'up (Conv2DTranspose)',
      ]);
      assert.match(err.message, /cannot convert 3 layer\(s\)/);
      assert.match(err.message, /up \(Conv2DTranspose\): no converter for layer class 'Conv2DTranspose'/);
      assert.match(err.message, /masked_embedding \(Embedding\): mask_zero=true/);
      return true;
    },
  );
});
