/**
 * Cached toy runs trained from a run config a test builds itself (with `frost train`'s flags through
 * newRunConfig, or toyRunConfig), on a cached toy corpus: the config, data folder included, is the
 * fixture's key, so the run is exactly the one the test would have trained from it.
 */
import { join } from 'node:path';
import { initBackend } from '../../train/backend/select.ts';
import type { RunConfig } from '../../train/run-config.ts';
import { train } from '../../train/trainer.ts';
import { cachedFixture } from './cached-fixture.ts';
import { TOY_CORPUS, writeToyData, type ToyCorpusSize } from './toy-run.ts';

const HELPERS = ['toy-run.ts', 'config-runs.ts'] as const;

/** A toy corpus (the `frost data toy` layout) for configs to point at. Read-only: it is shared. */
export async function cachedToyData(size: ToyCorpusSize = TOY_CORPUS): Promise<string> {
  const dir = await cachedFixture({
    name: `toy-data-${size.train}`,
    settings: size,
    helpers: HELPERS,
    async build(into) {
      await writeToyData(join(into, 'toy'), size);
    },
  });
  return join(dir, 'toy');
}

/**
 * The run folder `config` trains (its data folder should be a cached one, so that the key stays the same from
 * one test run to the next). `name` tells apart the folders of different tests. Read-only: copy it before
 * writing into it.
 */
export async function cachedConfigRun(name: string, config: RunConfig): Promise<string> {
  const dir = await cachedFixture({
    name: `config-run-${name}`,
    settings: config,
    helpers: HELPERS,
    async build(into) {
      await initBackend({ prefer: 'wasm', quiet: true });
      const result = await train(config, join(into, 'run'), { quiet: true });
      result.model.params.dispose();
    },
  });
  return join(dir, 'run');
}
