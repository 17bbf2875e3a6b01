/**
 * The toy caption data set, and toy caption runs of any architecture and recipe trained on it, and
 * their exports, cached (cached-fixture.ts) for tests that need them without testing that training
 * itself: the reference run a resumed one is compared with, the show-attend-tell model whose
 * captions are scored. (toyCaptionModel() in toy-caption-model.ts is the one show-tell model most
 * tests share.) The folders are shared and read-only: a test that trains on the cached data set
 * gives its run an image cache of its own (toyCaptionConfig's `dir`). The runs' own image caches
 * are not kept.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import { MODEL_CARD_FILE } from '../../core/runtime/model-card.ts';
import { exportRun } from '../../export/export-run.ts';
import { initBackend } from '../../train/backend/select.ts';
import { imagesOf, loadCaptionDataset, type CaptionImage } from '../../train/data/captions.ts';
import type { CaptionRunConfigInput } from '../../train/run-config.ts';
import { train } from '../../train/trainer.ts';
import { cachedFixture } from './cached-fixture.ts';
import { toyCaptionConfig, writeToyCaptions } from './toy-caption-run.ts';

/** A run: the architecture and what toyCaptionConfig's `extra` overrides (the recipe, epochs, ...). */
export interface ToyCaptionSpec {
  arch: string;
  extra: Partial<CaptionRunConfigInput>;
}

/** What train() returned for a cached run, kept beside it. */
export interface CaptionTrained {
  epochs: number;
  steps: number;
}

const HELPERS = ['toy-caption-run.ts', 'toy-caption-fixtures.ts'] as const;
const TRAINED = 'trained.json';

/** The toy caption data set (writeToyCaptions), cached: read-only, so train on it with an image cache of your own. */
export async function cachedToyCaptionData(): Promise<{ dataDir: string; testImages: CaptionImage[] }> {
  const dir = await cachedFixture({
    name: 'toy-caption-data',
    settings: {},
    helpers: HELPERS,
    build: (into) => writeToyCaptions(into).then(() => undefined),
  });
  const dataDir = join(dir, 'toy');
  return { dataDir, testImages: imagesOf(await loadCaptionDataset(dataDir), ['test']) };
}

/** A cached toy caption run on the cached data set, and what its training returned. */
export async function cachedToyCaptionRun(spec: ToyCaptionSpec): Promise<{
  dataDir: string;
  testImages: CaptionImage[];
  runDir: string;
  trained: CaptionTrained;
}> {
  const { dataDir, testImages } = await cachedToyCaptionData();
  const dir = await cachedFixture({
    name: `toy-caption-run-${slug(spec)}`,
    settings: spec,
    helpers: HELPERS,
    async build(into) {
      await initBackend({ prefer: 'wasm', quiet: true });
      const result = await train(toyCaptionConfig(into, dataDir, spec.arch, spec.extra), join(into, 'run'), {
        quiet: true,
      });
      result.model.params.dispose();
      await writeFile(join(into, TRAINED), JSON.stringify({ epochs: result.epochs, steps: result.steps }));
      await rm(join(into, 'cache'), { recursive: true, force: true });
    },
  });
  return {
    dataDir,
    testImages,
    runDir: join(dir, 'run'),
    trained: JSON.parse(await readFile(join(dir, TRAINED), 'utf8')) as CaptionTrained,
  };
}
/** A cached toy caption run exported (its `best` checkpoint) to `modelDir`, and the held-out images. */
export async function cachedToyCaptionModel(
  spec: ToyCaptionSpec,
): Promise<{ dataDir: string; testImages: CaptionImage[]; modelDir: string; card: ModelCard }> {
  const { dataDir, testImages, runDir } = await cachedToyCaptionRun(spec);
  const dir = await cachedFixture({
    name: `toy-caption-model-${slug(spec)}`,
    settings: spec,
    helpers: HELPERS,
    async build(into) {
      await initBackend({ prefer: 'wasm', quiet: true });
      await exportRun(runDir, join(into, 'model'), { quiet: true });
    },
  });
  const modelDir = join(dir, 'model');
  const card = JSON.parse(await readFile(join(modelDir, MODEL_CARD_FILE), 'utf8')) as ModelCard;
  return { dataDir, testImages, modelDir, card };
}

/** The architecture, to tell the folders apart (cachedFixture keys the settings). */
function slug(spec: ToyCaptionSpec): string {
  return spec.arch.toLowerCase().replace(/[^a-z0-9-]+/g, '-');
}
