/**
 * `--watch`: reloads a model when files in its directory change. The new version is loaded and
 * checked completely (card, graph sizes, sessions, graph/card agreement) before it replaces the old
 * one, so a broken or half-copied file is refused with a log line and the old model keeps serving.
 * The old runtime is released once no batch uses it. Every kind of model is watched the same way
 * (the server's ServedModels). A folder that serves no model (refused at start-up, or new under `--models`)
 * is watched too, and once it loads it is served as a start-up model would have been.
 */
import { readdirSync, statSync, watch, type FSWatcher } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from './logger.ts';
import { hasModelCard, mayHoldModel } from './model-folders.ts';
import type { ModelRuntime } from './model-runtime.ts';

/** What a reloadable runtime has: its card's name, and a release once it is idle. */
export interface ReloadableRuntime {
  readonly card: { readonly name: string };
  release(): Promise<void>;
}

/** The loaded models a watch reloads: the server's ServedModels. */
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
export interface WatchOptions<R extends ReloadableRuntime = ModelRuntime> {
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
 * Watches the directory of every loaded model, and its parent for the directory's own name: files
 * replaced inside it (write or rename) are seen, and so is the directory replaced as a whole
 * (`mv model model.old && mv model.new model`, or a link `current -> v3` pointed at v4), after which
 * the new directory is watched. An inotify watch follows the inode, not the name, which is why the
 * parent is needed: without it the server kept watching the moved-away folder. With `root`, the
 * other folders in it are watched the same way (see {@link WatchOptions.root}).
 */
export function watchModels<R extends ReloadableRuntime>(
  registry: WatchedModels<R>,
  opts: WatchOptions<R>,
): ModelWatch {
  const debounceMs = opts.debounceMs ?? 300;
  const watchers: Array<{ close(): void }> = [];
  const timers = new Set<NodeJS.Timeout>();
  /**
   * The folders watched, by path, each with whether it was refused for its model's name (a second folder of a
   * served model): such a folder is tried again when another loads, which may have settled the clash (`v4`
   * refused beside `current -> v3`, then `current` pointed at v4).
   */
  const folders = new Map<string, { clashed(): boolean; schedule(): void }>();
  const settled = (dir: string) => {
    for (const [other, folder] of folders) if (other !== dir && folder.clashed()) folder.schedule();
  };
  let closed = false;

  /** Watches `dir`, which serves model `served` (none yet when not given); returns its reload's trigger. */
  const watchFolder = (dir: string, served?: string): (() => void) => {
    let name = served;
    let timer: NodeJS.Timeout | undefined;
    let clashed = false;
    const outcome = (refusal?: string, clash = false) => {
      clashed = clash;
      opts.onOutcome?.(dir, refusal);
    };
    const refuse = (model: string | undefined, reason: string, clash = false) => {
      opts.logger.error(
        { model, dir, err: reason },
        name === undefined
          ? 'model folder refused; the other models are served'
          : 'model reload refused; the previous version keeps serving',
      );
      outcome(reason, clash);
      opts.onReload?.(model ?? dir, false);
    };
    // A folder serving nothing is served once it loads, as at start-up; the same name twice is refused.
    const admit = async (fresh: R) => {
      try {
        registry.add({ name: fresh.card.name, dir, runtime: fresh });
      } catch (err) {
        await fresh.release().catch(() => undefined);
        refuse(fresh.card.name, (err as Error).message, true);
        return;
      }
      name = fresh.card.name;
      opts.logger.info({ model: name, dir }, 'model loaded');
      outcome();
      opts.onReload?.(name, true);
      settled(dir);
    };
    const replace = async (fresh: R, current: string) => {
      if (fresh.card.name !== current) {
        await fresh.release().catch(() => undefined);
        refuse(current, `the card renames the model '${current}' to '${fresh.card.name}'; restart to rename`);
        return;
      }
      const old = registry.replace({ name: current, dir, runtime: fresh });
      opts.logger.info({ model: current, dir }, 'model reloaded');
      outcome();
      opts.onReload?.(current, true);
      settled(dir);
      await opts
        .retire(old.runtime)
        .catch((err: unknown) =>
          opts.logger.warn({ model: current, err: (err as Error).message }, 'releasing the previous version failed'),
        );
    };
    // Reloads of one folder run one at a time; a change during a reload triggers one more.
    let reloading: Promise<void> = Promise.resolve();
    const reload = async () => {
      if (closed) return;
      if (name === undefined && !(await holdsOwnModel(dir, registry))) {
        // Gone, or no model folder (any more), or served under another name: nothing to refuse, as at start-up.
        outcome();
        return;
      }
      let fresh: R;
      try {
        fresh = await opts.load(dir);
      } catch (err) {
        refuse(name, (err as Error).message);
        return;
      }
      if (closed) await fresh.release().catch(() => undefined);
      else if (name === undefined) await admit(fresh);
      else await replace(fresh, name);
    };
    const schedule = () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timers.delete(timer!);
        // Never a rejection left unhandled: the server must outlive anything a folder holds.
        reloading = reloading
          .then(reload)
          .catch((err: unknown) => warn(err as Error, 'reloading the model directory failed'));
      }, debounceMs);
      timers.add(timer);
    };
    let inner: FSWatcher | undefined;
    const warn = (err: Error, what: string) => opts.logger.warn({ model: name, dir, err: err.message }, what);
    const watchDir = () => {
      inner?.close();
      inner = undefined;
      if (closed) return;
      try {
        inner = watch(dir, schedule);
      } catch (err) {
        // The name is between two renames; the parent's next event for it watches again.
        warn(err as Error, 'watching the model directory failed');
        return;
      }
      inner.on('error', (err) => warn(err, 'watching the model directory failed'));
    };
    const base = basename(dir);
    const parent = watch(dirname(dir), (_event, file) => {
      if (file !== base) return;
      watchDir();
      schedule();
    });
    parent.on('error', (err) => warn(err, 'watching the models folder failed'));
    watchers.push(parent, { close: () => inner?.close() });
    folders.set(dir, { clashed: () => clashed, schedule });
    watchDir();
    return schedule;
  };

  for (const { name, dir } of registry.list()) if (dir) watchFolder(dir, name);
  if (opts.root) watchRoot(opts.root);

  /** Watches every other folder in `root` now, and each new one as it appears (a new one is tried at once). */
  function watchRoot(root: string): void {
    const adopt = (entry: string, now: boolean) => {
      const dir = join(root, entry);
      if (closed || folders.has(dir) || !mayHoldModel(entry) || !isDirectory(dir)) return;
      try {
        const schedule = watchFolder(dir);
        if (now) schedule();
      } catch (err) {
        // Never fatal (the inotify limit, a folder already gone): the folder is only not served.
        opts.logger.warn({ dir, err: (err as Error).message }, 'watching a model folder failed');
      }
    };
    const fail = (err: Error) => opts.logger.warn({ dir: root, err: err.message }, 'watching the models folder failed');
    try {
      for (const entry of readdirSync(root)) adopt(entry, false);
      const w = watch(root, (_event, file) => file && adopt(file, true));
      w.on('error', fail);
      watchers.push(w);
    } catch (err) {
      fail(err as Error);
    }
  }

  return {
    close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      for (const w of watchers) w.close();
    },
  };
}

/** A directory (a link to one included); false when it is gone. */
function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Whether `dir` holds a model card and is not a served folder under another name (`current -> v3` beside
 * `v3`, which start-up loads once, under the link's name).
 */
async function holdsOwnModel(dir: string, registry: WatchedModels<ReloadableRuntime>): Promise<boolean> {
  if (!hasModelCard(dir)) return false;
  const real = (path: string) => realpath(path).catch(() => path);
  const own = await real(dir);
  for (const m of registry.list()) if (m.dir && (await real(m.dir)) === own) return false;
  return true;
}
