/**
 * `frost serve`'s start-up load: every model folder under `--models`, of whichever kind, read
 * (serve/model-folders.ts) and started in its decode threads (serve/worker-runtime.ts) by one loader.
 */
import type { ModelFamily } from '../core/runtime/card-kinds.ts';
import type { LmCard } from '../core/runtime/lm-card.ts';
import type { Device } from '../core/runtime/load-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { Logger } from './logger.ts';
import type { ServeMetrics } from './metrics.ts';
import { findModelDirs, readModelFolder } from './model-folders.ts';
import { type AnyRuntime, type ServedModel, ServedModels, type ServedModelsOptions } from './served-models.ts';
import { WorkerRuntime } from './worker-runtime.ts';

/** Loads one model folder in its decode threads; with `family`, a model of another family is refused. */
export type FolderLoader = (dir: string, family?: ModelFamily) => Promise<AnyRuntime>;

/** What {@link threadLoader} starts threads with. */
export interface ThreadLoaderOptions {
  workers: number;
  device?: Device;
  intraOpNumThreads?: number;
  logger: Logger;
  metrics: ServeMetrics;
}

/** The server's loader: decode threads for one model folder, their crashes and restarts counted and logged. */
export function threadLoader(opts: ThreadLoaderOptions): FolderLoader {
  const { logger, metrics } = opts;
  return async (dir, family) => {
    let model = dir;
    const runtime = await WorkerRuntime.load(
      dir,
      {
        workers: opts.workers,
        device: opts.device,
        intraOpNumThreads: opts.intraOpNumThreads,
        log: (message) => logger.warn(message),
        onCrash: (reason) => {
          metrics.decodeThreadCrashes.inc({ model });
          logger.error(
            { model, dir, reason },
            'decode thread crashed: its requests failed with FROST_ERR_DECODER_CRASHED; restarting it',
          );
        },
        onRestart: (error) =>
          error
            ? logger.error({ model, dir, err: error }, 'restarting a decode thread failed; retrying')
            : logger.info({ model, dir }, 'decode thread restarted'),
      },
      family,
    );
    model = runtime.card.name;
    // Its family is the card's, which the views check again; either way a WorkerRuntime answers both.
    return runtime as WorkerRuntime<ModelCard> | WorkerRuntime<LmCard>;
  };
}

/**
 * Loads `modelsDir` (a model folder, or a folder of them) with `load`.
 * @throws Error naming the folder when there is no model, or the file of one that cannot be loaded
 *   (the models loaded before it are released)
 */
export async function loadServedModels(
  modelsDir: string,
  load: FolderLoader,
  opts: ServedModelsOptions,
): Promise<ServedModels> {
  const loaded: ServedModel[] = [];
  try {
    for (const dir of await findModelDirs(modelsDir)) {
      const folder = await readModelFolder(dir);
      const runtime = await load(dir, folder.kind.family);
      loaded.push({ name: runtime.card.name, dir, runtime });
    }
    return new ServedModels(loaded, opts);
  } catch (err) {
    await Promise.all(loaded.map((m) => m.runtime.release().catch(() => undefined)));
    throw err;
  }
}
