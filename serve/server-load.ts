/**
 * `frost serve`'s start-up load: every model folder under `--models`, of whichever kind, read
 * (serve/model-folders.ts) and started in its decode threads (serve/worker-runtime.ts) by one loader.
 */
import type { ModelFamily } from '../core/runtime/card-kinds.ts';
import type { LmCard } from '../core/runtime/lm-card.ts';
import type { Device } from '../core/runtime/load-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import { clip, REFUSAL_CHARS } from './errors.ts';
import type { Logger } from './logger.ts';
import type { ServeMetrics } from './metrics.ts';
import { findModelDirs, readModelFolder } from './model-folders.ts';
import type { AnyRuntime } from './model-registry.ts';
import { type ServedModel, ServedModels, type ServedModelsOptions } from './served-models.ts';
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
 * Loads `modelsDir` (a model folder, or a folder of them) with `load`. A folder that cannot be loaded
 * is refused, logged with its reason, and listed by `/readyz` and `/v1/models`; the others are served,
 * as `--watch` keeps serving when a new version is refused.
 * @throws Error naming the folder when it holds no model, or the refused folders and why when none loads
 */
export async function loadServedModels(
  modelsDir: string,
  load: FolderLoader,
  opts: ServedModelsOptions & { logger: Logger },
): Promise<ServedModels> {
  const loaded: ServedModel[] = [];
  const refused: Array<{ dir: string; reason: string }> = [];
  let models: ServedModels;
  try {
    for (const dir of await findModelDirs(modelsDir, (line) => opts.logger.warn({ dir: modelsDir }, line))) {
      try {
        const runtime = await loadFolder(dir, load);
        loaded.push({ name: runtime.card.name, dir, runtime });
      } catch (err) {
        const reason = clip((err as Error)?.message ?? String(err), REFUSAL_CHARS);
        opts.logger.error({ dir, err: reason }, 'model folder refused; the other models are served');
        refused.push({ dir, reason });
      }
    }
    if (loaded.length === 0) throw new Error(noModelMessage(modelsDir, refused));
    models = new ServedModels(loaded, opts);
  } catch (err) {
    await Promise.all(loaded.map((m) => m.runtime.release().catch(() => undefined)));
    throw err;
  }
  for (const r of refused) models.noteRefusal(modelsDir, r.dir, r.reason);
  return models;
}

/**
 * One folder, at start-up as under `--watch`: its card read (model-folders.ts), then the runtime of the card's
 * family started; a reload passes the `family` its model was served as, which the new version must keep.
 * @throws Error saying why the folder is refused (the caller logs it and lists it as refused)
 */
export async function loadFolder(dir: string, load: FolderLoader, family?: ModelFamily): Promise<AnyRuntime> {
  return load(dir, family ?? (await readModelFolder(dir)).kind.family);
}

/** A lone folder's reason is the whole story (it names the file); several are listed one by one. */
function noModelMessage(modelsDir: string, refused: ReadonlyArray<{ dir: string; reason: string }>): string {
  if (refused.length === 1) return refused[0].reason;
  return `${modelsDir}: no model could be loaded; every folder was refused: ${refused.map((r) => `${r.dir} (${r.reason})`).join('; ')}`;
}
