/**
 * One trained and exported toy caption model, shared by the tests that only need *a* real caption
 * model (the CLI, the browser page, the caption route) rather than to test training itself. Built
 * once per content hash of the code that makes it (cached-fixture.ts).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { exportRun } from '../../export/export-run.ts';
import { initBackend } from '../../train/backend/select.ts';
import { imagesOf, loadCaptionDataset, type CaptionImage } from '../../train/data/captions.ts';
import { train } from '../../train/trainer.ts';
import { cachedFixture } from './cached-fixture.ts';
import { toyCaptionConfig, writeToyCaptions } from './toy-caption-run.ts';

/** The settings caption-model-e2e.test.ts shows reach BLEU-4 ≥ 0.45, so captions depend on the image. */
const TRAINING = { arch: 'show-tell', epochs: 14, learningRate: 3e-3 } as const;
/** The name in the model's card, hence on a server. */
export const TOY_CAPTION_MODEL_NAME = 'toy-caption';

/** A cached toy caption model and the data set it was trained on. */
export interface ToyCaptionModel {
  /** The exported model (model-card.json, encoder.onnx, decoder.onnx). Read-only: it is shared. */
  modelDir: string;
  /** The toy data set (Karpathy layout, 64² PNGs). */
  dataDir: string;
  /** The held-out images, with their references. */
  testImages: CaptionImage[];
}

/** Returns the cached model, training and exporting it first when no cache matches the current sources. */
export async function toyCaptionModel(): Promise<ToyCaptionModel> {
  const dir = await cachedFixture({
    name: 'toy-caption',
    settings: TRAINING,
    helpers: ['toy-caption-run.ts', 'toy-caption-model.ts'],
    build,
  });
  const dataDir = join(dir, 'toy');
  return { modelDir: join(dir, 'model'), dataDir, testImages: imagesOf(await loadCaptionDataset(dataDir), ['test']) };
}

async function build(dir: string): Promise<void> {
  await initBackend({ prefer: 'wasm', quiet: true });
  const { dataDir } = await writeToyCaptions(dir);
  const config = toyCaptionConfig(dir, dataDir, TRAINING.arch, {
    optim: { learningRate: TRAINING.learningRate },
    epochs: TRAINING.epochs,
  });
  const runDir = join(dir, 'run');
  const result = await train(config, runDir, { quiet: true });
  result.model.params.dispose();
  await exportRun(runDir, join(dir, 'model'), { name: TOY_CAPTION_MODEL_NAME, quiet: true });
  // The run's checkpoints and image cache are not needed once exported; keep the cache small.
  await rm(runDir, { recursive: true, force: true });
  await rm(join(dir, 'cache'), { recursive: true, force: true });
}
