import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { decodeImage } from '../../core/image/decode-node.ts';
import { preprocessRgba } from '../../core/image/preprocess.ts';
import { evaluateCaptions } from '../../core/metrics/caption-eval.ts';
import { loadCaptionModelDir } from '../../core/runtime/load-node.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import { exportRun } from '../../export/export-run.ts';
import { resolveArchConfig } from '../../models/index.ts';
import { imagesOf, loadCaptionDataset, type CaptionImage } from '../../train/data/captions.ts';
import { makeToyCaptions } from '../../train/data/toy-captions.ts';
import { runConfigSchema, type CaptionRunConfig, type CaptionRunConfigInput } from '../../train/run-config.ts';
import { initBackend } from '../../train/backend/select.ts';
import { train } from '../../train/trainer.ts';
import { checkModel } from './onnx-check.ts';

/** The toy caption corpus the end-to-end tests learn: 200 images of coloured shapes, 64² PNGs. */
export async function writeToyCaptions(dir: string): Promise<{ dataDir: string; testImages: CaptionImage[] }> {
  const dataDir = join(dir, 'toy');
  await makeToyCaptions(dataDir, { count: 200, size: 64 });
  return { dataDir, testImages: imagesOf(await loadCaptionDataset(dataDir), ['test']) };
}

/** What {@link toyCaptionFixture} sets up; its fields are filled in by `before`. */
export interface ToyCaptionFixture {
  /** The temporary directory, deleted after the file's tests. */
  dir: string;
  dataDir: string;
  testImages: CaptionImage[];
}

/**
 * Registers the test file's `before` and `after`: the wasm backend, and the toy caption corpus in a fresh
 * temporary directory `prefix…` that `after` deletes.
 */
export function toyCaptionFixture(prefix: string): ToyCaptionFixture {
  const fixture = {} as ToyCaptionFixture;
  before(async () => {
    await initBackend({ prefer: 'wasm', quiet: true });
    fixture.dir = await mkdtemp(join(tmpdir(), prefix));
    ({ dataDir: fixture.dataDir, testImages: fixture.testImages } = await writeToyCaptions(fixture.dir));
  });
  after(async () => {
    await rm(fixture.dir, { recursive: true, force: true });
  });
  return fixture;
}

/** A tiny caption run on the toy corpus at 32² (the image cache downsizes the PNGs); `extra` overrides any field. */
export function toyCaptionConfig(
  dir: string,
  dataDir: string,
  arch: string,
  extra: Partial<CaptionRunConfigInput> = {},
): CaptionRunConfig {
  return runConfigSchema.parse({
    task: 'caption',
    arch,
    preset: 'tiny',
    archConfig: resolveArchConfig(arch, 'tiny'),
    head: { name: 'learned' },
    data: { dir: dataDir },
    vocab: { minFreq: 1 },
    image: { size: 32, mean: [0.5, 0.5, 0.5], std: [0.25, 0.25, 0.25] },
    imageCache: join(dir, 'cache'),
    ...extra,
  }) as CaptionRunConfig;
}

/** Captions of `images` by an exported model through onnxruntime-node, scored with coco-caption BLEU-4. */
export async function toyTestBleu4(
  modelDir: string,
  images: CaptionImage[],
  beam = 1,
): Promise<{ bleu4: number; captions: string[] }> {
  const runtime = await loadCaptionModelDir(modelDir);
  try {
    const inputs: Float32Array[] = [];
    for (const im of images) {
      const { rgba, width, height } = await decodeImage(im.path);
      inputs.push(preprocessRgba(rgba, width, height, runtime.imageSpec));
    }
    const captions = (await runtime.caption(inputs, { beam })).map((c) => c.text);
    return {
      bleu4: evaluateCaptions(
        captions,
        images.map((im) => im.captions),
      ).bleu4,
      captions,
    };
  } finally {
    await runtime.release();
  }
}

/**
 * Trains `config` in `dir/run` and exports it to `dir/model`, checking that the export's graphs agree with the
 * trained model (parity within 1e-4) and that both pass the ONNX checker.
 */
export async function trainAndExportToyCaption(
  dir: string,
  config: CaptionRunConfig,
): Promise<{ modelDir: string; card: ModelCard }> {
  const runDir = join(dir, 'run');
  const result = await train(config, runDir, { quiet: true });
  result.model.params.dispose();
  const modelDir = join(dir, 'model');
  const { card, parity } = await exportRun(runDir, modelDir, { quiet: true });
  assert.ok(parity.maxScaledDiff <= 1e-4);
  for (const file of ['encoder.onnx', 'decoder.onnx']) checkModel(join(modelDir, file));
  return { modelDir, card };
}
