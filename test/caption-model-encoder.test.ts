/**
 * `frost train --task caption --encoder some.onnx`: a pretrained image encoder in ONNX (here a small
 * CNN built with frost's GraphBuilder, so nothing is downloaded) run frozen by onnxruntime, its
 * features cached on disk, and merged into the exported encoder so the served model takes pixels.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { decodeModel } from '../core/onnx/proto.ts';
import { SeededRandom } from '../core/random.ts';
import { loadCaptionModelDir } from '../core/runtime/load-node.ts';
import { readModelCard } from '../core/runtime/load-node.ts';
import { exportRun } from '../export/export-run.ts';
import { FROZEN_ENCODER_SCOPE, mergeFrozenEncoder } from '../export/merge-encoder.ts';
import { newRunConfig } from '../clients/cli/commands/train-config.ts';
import { initBackend } from '../train/backend/select.ts';
import { describeFrozenEncoder } from '../train/data/image-features.ts';
import { makeToyCaptions } from '../train/data/toy-captions.ts';
import { train } from '../train/trainer.ts';
import { frostInProcess as frost } from './helpers/frost-in-process.ts';
import { checkModel } from './helpers/onnx-check.ts';

const SIZE = 32;
let dir: string;
let dataDir: string;
let encoderPath: string;

/**
 * A stand-in for a model-zoo CNN, at opset 17 (frost writes 18, so the merge must build the
 * model's encoder at the foreign opset): image [N, 3, 32, 32] → two strided 3×3 convolutions →
 * feature_map [N, 16, 8, 8], and a second output pooled [N, 16].
 */
function pretrainedCnn(): Uint8Array {
  const rng = new SeededRandom(7, 'pretrained-cnn');
  const weights = (n: number, scale: number) => Float32Array.from({ length: n }, () => rng.normal() * scale);
  const g = new GraphBuilder('zoo-cnn', { opset: 17 });
  const image = g.input('image', 'float32', ['N', 3, SIZE, SIZE]);
  const conv = (x: string, cin: number, cout: number, name: string) =>
    g.op('Relu', [
      g.op(
        'Conv',
        [
          x,
          g.initializer(`${name}.weight`, {
            dtype: 'float32',
            dims: [cout, cin, 3, 3],
            data: weights(cout * cin * 9, Math.sqrt(2 / (cin * 9))),
          }),
          g.initializer(`${name}.bias`, { dtype: 'float32', dims: [cout], data: weights(cout, 0.1) }),
        ],
        { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] },
      ),
    ]);
  const map = conv(conv(image, 3, 8, 'layer1'), 8, 16, 'layer2');
  g.output(map, 'feature_map', 'float32', ['N', 16, SIZE / 4, SIZE / 4]);
  g.output(g.op('Flatten', [g.op('GlobalAveragePool', [map])]), 'pooled', 'float32', ['N', 16]);
  return g.toBytes();
}

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-caption-encoder-'));
  dataDir = join(dir, 'toy');
  await makeToyCaptions(dataDir, { count: 48, size: 64 });
  encoderPath = join(dir, 'zoo-cnn.onnx');
  await writeFile(encoderPath, pretrainedCnn());
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a frozen pretrained encoder (--encoder some.onnx)', () => {
  // The commands run in this process, as the CLI registers them (helpers/frost-in-process.ts).
  test('frost train/export through the CLI: features cached, encoder merged, served model takes pixels', async () => {
    const runDir = join(dir, 'run');
    const cache = join(dir, 'cache');
    const trained = await frost([
      'train',
      '--task',
      'caption',
      '--arch',
      'show-attend-tell',
      '--preset',
      'tiny',
      '--head',
      'fixed-uniform',
      '--data',
      dataDir,
      '--encoder',
      encoderPath,
      '--encoder-output',
      'feature_map',
      '--epochs',
      '2',
      '--min-freq',
      '1',
      '--val-sentences',
      '4',
      '--image-cache',
      cache,
      '--out',
      runDir,
      '--quiet',
    ]);
    assert.equal(trained.code, 0, trained.stderr);
    const config = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8'));
    assert.equal(config.encoder.kind, 'onnx');
    assert.deepEqual(config.encoder.featureShape, [16, 8, 8]);
    assert.equal(config.image.size, SIZE, "the image size comes from the encoder's fixed input");
    assert.ok(
      (await readdir(cache)).some((f) => /^features-.*\.f32$/.test(f)),
      'no feature cache written',
    );
    // Frozen means frozen: the run has no parameter of the pretrained CNN.
    const manifest = JSON.parse(await readFile(join(runDir, 'checkpoints', 'last', 'checkpoint.json'), 'utf8'));
    assert.ok(
      !manifest.tensors.some((t: { name: string }) => t.name.includes('cnn')),
      'the frozen encoder was trained',
    );

    const modelDir = join(dir, 'model');
    const exported = await frost(['export', runDir, '--out', modelDir, '--quiet']);
    assert.equal(exported.code, 0, exported.stderr);
    const card = await readModelCard(modelDir);
    assert.deepEqual(card.graphs.encoder.inputs, ['pixels']);
    assert.equal((card.config.encoder as { kind: string }).kind, 'onnx');
    const report = checkModel(join(modelDir, 'encoder.onnx'));
    assert.equal(report.modelOpset, 17);
    const graph = (
      decodeModel(new Uint8Array(await readFile(join(modelDir, 'encoder.onnx')))) as {
        graph: { input: { name: string }[]; node: { op_type: string; name: string }[] };
      }
    ).graph;
    assert.deepEqual(
      graph.input.map((i) => i.name),
      ['pixels'],
    );
    assert.equal(
      graph.node.filter((n) => n.op_type === 'Conv' && n.name.startsWith(`${FROZEN_ENCODER_SCOPE}/`)).length,
      2,
    );

    const runtime = await loadCaptionModelDir(modelDir);
    const rng = new SeededRandom(1, 'pixels');
    const captions = await runtime.caption([Float32Array.from({ length: 3 * SIZE * SIZE }, () => rng.normal())], {
      beam: 2,
    });
    assert.equal(captions.length, 1);
    assert.ok(captions[0].tokens.length > 0);
    await runtime.release();
  });

  test('show-tell on a pooled [C] output, through the API; parity holds on the merged graph', async () => {
    const runDir = join(dir, 'run-pooled');
    const config = await newRunConfig(
      {
        task: 'caption',
        arch: 'show-tell',
        head: 'tied',
        data: dataDir,
        preset: 'tiny',
        set: {},
        headOption: {},
        seed: 1,
        epochs: 1,
        minFreq: 1,
        valSentences: 4,
        encoder: encoderPath,
        encoderOutput: 'pooled',
        imageCache: join(dir, 'cache'),
      },
      runDir,
    );
    (await train(config, runDir, { quiet: true })).model.params.dispose();
    const { card, parity } = await exportRun(runDir, join(dir, 'model-pooled'), { quiet: true });
    assert.ok(parity.maxScaledDiff <= 1e-4, `parity ${parity.maxScaledDiff}`);
    assert.deepEqual((card.config.encoder as { featureShape: number[] }).featureShape, [16]);
  });

  test('an encoder that does not take one [N, 3, H, W] image is refused with the reason', async () => {
    const g = new GraphBuilder('two-inputs', { opset: 17 });
    const a = g.input('a', 'float32', ['N', 3, 8, 8]);
    const b = g.input('b', 'float32', ['N', 3, 8, 8]);
    g.output(g.op('Add', [a, b]), 'y', 'float32', ['N', 3, 8, 8]);
    await assert.rejects(
      describeFrozenEncoder(g.toBytes(), 'two.onnx'),
      /two\.onnx: a frozen image encoder must have one input/,
    );
    await assert.rejects(
      describeFrozenEncoder(pretrainedCnn(), 'zoo.onnx', { output: 'nope' }),
      /no output 'nope' \(outputs: feature_map, pooled\)/,
    );
    await assert.rejects(describeFrozenEncoder(pretrainedCnn(), 'zoo.onnx', { size: 64 }), /fixed at 32×32, not 64×64/);
    assert.throws(
      () => mergeFrozenEncoder(pretrainedCnn(), 'feature_map', trivialGraph().toBytes(), 'features', 'pixels'),
      /opset mismatch: the frozen encoder uses opset 17/,
    );
  });
});

function trivialGraph(): GraphBuilder {
  const g = new GraphBuilder('m', { opset: 18 });
  g.output(g.op('Relu', [g.input('features', 'float32', ['N', 16])]), 'h', 'float32', ['N', 16]);
  return g;
}
