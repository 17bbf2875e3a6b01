/**
 * `--watch`: reloads a model when files in its directory change. The new version is loaded and
 * checked completely (card, graph sizes, sessions, graph/card agreement) before it replaces the old
 * one, so a broken or half-copied file is refused with a log line and the old model keeps serving.
 * The old runtime is released once no batch uses it. Every kind of model is watched the same way
 * (the server's ServedModels); a folder refused at start-up is not watched (a restart loads it).
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from './logger.ts';
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
  /** Called after each reload attempt (tests wait on it). */
  onReload?(model: string, ok: boolean): void;
  /** Called after each reload attempt with the model's directory and, when refused, the reason. */
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
 * parent is needed: without it the server kept watching the moved-away folder.
 */
export function watchModels<R extends ReloadableRuntime>(
  registry: WatchedModels<R>,
  opts: WatchOptions<R>,
): ModelWatch {
  const debounceMs = opts.debounceMs ?? 300;
  const watchers: Array<{ close(): void }> = [];
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  for (const model of registry.list()) {
    const { name, dir } = model;
    if (!dir) continue;
    let timer: NodeJS.Timeout | undefined;
    // Reloads of one model run one at a time; a change during a reload triggers one more.
    let reloading: Promise<void> = Promise.resolve();
    const reload = async () => {
      if (closed) return;
      let fresh: R;
      try {
        fresh = await opts.load(dir);
      } catch (err) {
        opts.logger.error(
          { model: name, dir, err: (err as Error).message },
          'model reload refused; the previous version keeps serving',
        );
        opts.onOutcome?.(dir, (err as Error).message);
        opts.onReload?.(name, false);
        return;
      }
      if (fresh.card.name !== name || closed) {
        await fresh.release().catch(() => undefined);
        if (!closed) {
          opts.logger.error(
            { model: name, dir, newName: fresh.card.name },
            'model reload refused: the card renames the model; restart to rename',
          );
          opts.onOutcome?.(dir, `the card renames the model '${name}' to '${fresh.card.name}'; restart to rename`);
          opts.onReload?.(name, false);
        }
        return;
      }
      const old = registry.replace({ name, dir, runtime: fresh });
      opts.logger.info({ model: name, dir }, 'model reloaded');
      opts.onOutcome?.(dir);
      opts.onReload?.(name, true);
      await opts
        .retire(old.runtime)
        .catch((err: unknown) =>
          opts.logger.warn({ model: name, err: (err as Error).message }, 'releasing the previous version failed'),
        );
    };
    const schedule = () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timers.delete(timer!);
        reloading = reloading.then(reload);
      }, debounceMs);
      timers.add(timer);
    };
    let inner: FSWatcher | undefined;
    const watchDir = () => {
      inner?.close();
      inner = undefined;
      if (closed) return;
      try {
        inner = watch(dir, schedule);
      } catch (err) {
        // The name is between two renames; the parent's next event for it watches again.
        opts.logger.warn({ model: name, dir, err: (err as Error).message }, 'watching the model directory failed');
        return;
      }
      inner.on('error', (err) =>
        opts.logger.warn({ model: name, dir, err: err.message }, 'watching the model directory failed'),
      );
    };
    watchDir();
    const base = basename(dir);
    const parent = watch(dirname(dir), (_event, file) => {
      if (file !== base) return;
      watchDir();
      schedule();
    });
    parent.on('error', (err) =>
      opts.logger.warn({ model: name, dir, err: err.message }, 'watching the models folder failed'),
    );
    watchers.push(parent, { close: () => inner?.close() });
  }

  return {
    close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      for (const w of watchers) w.close();
    },
  };
}
