/**
 * `--watch`: reloads a model when files in its directory change. The new version is loaded and
 * checked completely (card, graph sizes, sessions, graph/card agreement) before it replaces the old
 * one, so a broken or half-copied file is refused with a log line and the old model keeps serving.
 * The old runtime is released once no batch uses it. Every kind of model is watched the same way
 * (the server's one ModelRegistry). A folder that serves no model (refused at start-up, or new under `--models`)
 * is watched too, and once it loads it is served as a start-up model would have been. Each folder's
 * stages (seen, settled, loaded, served or refused) are serve/watched-folder.ts's.
 */
import { readdirSync, statSync, watch } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from './logger.ts';
import { mayHoldModel } from './model-folders.ts';
import type { AnyRuntime } from './model-registry.ts';
import { WatchedFolder, type WatchScope } from './watched-folder.ts';

/** What a reloadable runtime has: its card's name, and a release once it is idle. */
export interface ReloadableRuntime {
  readonly card: { readonly name: string };
  release(): Promise<void>;
}

/** The loaded models a watch reloads: the server's ModelRegistry. */
export interface WatchedModels<R extends ReloadableRuntime> {
  list(): ReadonlyArray<{ name: string; dir?: string }>;
  /** Swaps in the new runtime under the model's name; returns the model it replaced. */
  replace(model: { name: string; dir?: string; runtime: R }): { runtime: R };
  /**
   * Serves a model from a folder that served none, under its card's name.
   * @throws Error when a model of that name is served (the folder is then refused with that reason)
   */
  add(model: { name: string; dir: string; runtime: R }): void;
}

/** Options of {@link watchModels}. */
export interface WatchOptions<R extends ReloadableRuntime = AnyRuntime> {
  /** Loads a model directory (the server's loader, with its device and thread settings). */
  load(dir: string): Promise<R>;
  /** Called with a replaced runtime; resolves once it is released. */
  retire(old: R): Promise<void>;
  logger: Logger;
  /** Quiet time after the last change before reloading: a copy writes several files. @default 300 */
  debounceMs?: number;
  /**
   * The folder of model folders (`--models D`, not a model folder itself): each subfolder serving no model is
   * watched too, and so is each new one. @default none: only the loaded models' folders are watched
   */
  root?: string;
  /**
   * Called after each reload attempt (tests wait on it), with the model's name (the card's, once read), or the
   * folder's path when a folder that serves no model could not be loaded.
   */
  onReload?(model: string, ok: boolean): void;
  /**
   * Called after each reload attempt with the model's directory and, when refused, the reason; without one, the
   * folder serves its model, or holds none to refuse (it is gone, or has no card).
   */
  onOutcome?(dir: string, refusal?: string): void;
}

/** A running watch; `close` stops it. */
export interface ModelWatch {
  close(): void;
}

/**
 * Watches the directory of every loaded model (each a {@link WatchedFolder}: files replaced inside it are seen,
 * and so is the directory replaced as a whole, after which the new one is watched), and with `root` the other
 * folders in it (see {@link WatchOptions.root}).
 */
export function watchModels<R extends ReloadableRuntime>(
  registry: WatchedModels<R>,
  opts: WatchOptions<R>,
): ModelWatch {
  const models = new ModelsWatch(registry, opts);
  for (const { name, dir } of registry.list()) if (dir) models.watchFolder(dir, name);
  if (opts.root) models.watchRoot(opts.root);
  return models;
}

/** The folders watched, and what they share: the models, the options, and the timers and watchers to stop. */
class ModelsWatch<R extends ReloadableRuntime> implements ModelWatch, WatchScope<R> {
  closed = false;
  readonly debounceMs: number;
  readonly timers = new Set<NodeJS.Timeout>();
  private readonly watchers: Array<{ close(): void }> = [];
  /** By path. */
  private readonly folders = new Map<string, WatchedFolder<R>>();

  constructor(
    readonly registry: WatchedModels<R>,
    readonly opts: WatchOptions<R>,
  ) {
    this.debounceMs = opts.debounceMs ?? 300;
  }

  /**
   * Watches `dir`, which serves model `served` (none yet when not given).
   * @throws Error when its parent cannot be watched
   */
  watchFolder(dir: string, served?: string): WatchedFolder<R> {
    const folder = new WatchedFolder(this, dir, served);
    this.folders.set(dir, folder);
    return folder;
  }

  /** Watches every other folder in `root` now, and each new one as it appears (a new one is tried at once). */
  watchRoot(root: string): void {
    const fail = (err: Error) =>
      this.opts.logger.warn({ dir: root, err: err.message }, 'watching the models folder failed');
    try {
      for (const entry of readdirSync(root)) this.adopt(root, entry, false);
      const w = watch(root, (_event, file) => file && this.adopt(root, file, true));
      w.on('error', fail);
      this.keep(w);
    } catch (err) {
      fail(err as Error);
    }
  }

  keep(watcher: { close(): void }): void {
    this.watchers.push(watcher);
  }

  /**
   * Tries again the folders refused for their model's name, which `dir` loading may have settled (`v4` refused
   * beside `current -> v3`, then `current` pointed at v4).
   */
  settled(dir: string): void {
    for (const [other, folder] of this.folders) if (other !== dir && folder.clashed) folder.schedule();
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    for (const w of this.watchers) w.close();
  }

  /** Watches `root/entry` unless it is watched already or cannot hold a model; `now` tries to load it at once. */
  private adopt(root: string, entry: string, now: boolean): void {
    const dir = join(root, entry);
    if (this.closed || this.folders.has(dir) || !mayHoldModel(entry) || !isDirectory(dir)) return;
    try {
      const folder = this.watchFolder(dir);
      if (now) folder.schedule();
    } catch (err) {
      // Never fatal (the inotify limit, a folder already gone): the folder is only not served.
      this.opts.logger.warn({ dir, err: (err as Error).message }, 'watching a model folder failed');
    }
  }
}

/** A directory (a link to one included); false when it is gone. */
function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
