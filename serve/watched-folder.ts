/**
 * One model folder under `--watch` (serve/watch.ts), and the stages a change to it goes through: seen (by the
 * folder's own watcher, or by its parent's for the folder's name), left to settle, loaded completely, then
 * served: admitted when the folder served no model yet, swapped in when it did, or refused with the log line
 * that says why while the old version keeps serving.
 */
import { watch, type FSWatcher } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { clip, REFUSAL_CHARS } from './errors.ts';
import { hasModelCard } from './model-folders.ts';
import type { ReloadableRuntime, WatchedModels, WatchOptions } from './watch.ts';

/** What a folder shares with the rest of its watch. */
export interface WatchScope<R extends ReloadableRuntime> {
  readonly registry: WatchedModels<R>;
  readonly opts: WatchOptions<R>;
  /** Quiet time after the last change before reloading. */
  readonly debounceMs: number;
  /** Once set, nothing more is watched, loaded or served. */
  readonly closed: boolean;
  /** Timers waiting to reload, cleared when the watch closes. */
  readonly timers: Set<NodeJS.Timeout>;
  /** Closes `watcher` when the watch closes. */
  keep(watcher: { close(): void }): void;
  /** `dir` now serves a model: a folder refused for its model's name may load now. */
  settled(dir: string): void;
}

export class WatchedFolder<R extends ReloadableRuntime> {
  /** The model the folder serves; undefined while it serves none. */
  private name: string | undefined;
  /** Whether its last version was refused for its model's name: a second folder of a served model. */
  private clash = false;
  private timer: NodeJS.Timeout | undefined;
  private inner: FSWatcher | undefined;
  /** Reloads run one at a time; a change during a reload triggers one more. */
  private reloading: Promise<void> = Promise.resolve();

  /**
   * Watches `dir`, which serves model `served` (none yet when not given), and its parent for the folder's name.
   * An inotify watch follows the inode, not the name: without the parent's, the server kept watching a
   * folder moved away (`mv model model.old && mv model.new model`, or a link `current -> v3` pointed at v4).
   * @throws Error when the parent cannot be watched
   */
  constructor(
    private readonly scope: WatchScope<R>,
    readonly dir: string,
    served?: string,
  ) {
    this.name = served;
    const base = basename(dir);
    const parent = watch(dirname(dir), (_event, file) => {
      if (file !== base) return;
      this.watchDir();
      this.schedule();
    });
    parent.on('error', (err) => this.warn(err, 'watching the models folder failed'));
    scope.keep(parent);
    scope.keep({ close: () => this.inner?.close() });
    this.watchDir();
  }

  /** Whether its last version was refused for its model's name; another folder loading may settle that. */
  get clashed(): boolean {
    return this.clash;
  }

  /** Seen: watches the folder now under its name, which after a rename or a relinked link is another one. */
  private watchDir(): void {
    this.inner?.close();
    this.inner = undefined;
    if (this.scope.closed) return;
    try {
      this.inner = watch(this.dir, () => this.schedule());
    } catch (err) {
      // The name is between two renames; the parent's next event for it watches again.
      this.warn(err as Error, 'watching the model directory failed');
      return;
    }
    this.inner.on('error', (err) => this.warn(err, 'watching the model directory failed'));
  }

  /** Left to settle: reloads once nothing has changed for the debounce time (a copy writes several files). */
  schedule(): void {
    const { timers } = this.scope;
    if (this.timer) {
      clearTimeout(this.timer);
      timers.delete(this.timer);
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      // Never a rejection left unhandled: the server must outlive anything a folder holds.
      this.reloading = this.reloading
        .then(() => this.reload())
        .catch((err: unknown) => this.warn(err as Error, 'reloading the model directory failed'));
    }, this.scope.debounceMs);
    this.timer = timer;
    timers.add(timer);
  }

  /** Loaded: the folder's contents loaded and checked completely, then served by the stage that fits. */
  private async reload(): Promise<void> {
    if (this.scope.closed) return;
    if (this.name === undefined && !(await holdsOwnModel(this.dir, this.scope.registry))) {
      // Gone, or no model folder (any more), or served under another name: nothing to refuse, as at start-up.
      this.outcome();
      return;
    }
    let fresh: R;
    try {
      fresh = await this.scope.opts.load(this.dir);
    } catch (err) {
      this.refuse(this.name, (err as Error).message);
      return;
    }
    if (this.scope.closed) await fresh.release().catch(() => undefined);
    else if (this.name === undefined) await this.admit(fresh);
    else await this.replace(fresh, this.name);
  }

  /** Served, new: a folder that served nothing serves its model, as at start-up; a name already served is refused. */
  private async admit(fresh: R): Promise<void> {
    const { name } = fresh.card;
    try {
      this.scope.registry.add({ name, dir: this.dir, runtime: fresh });
    } catch (err) {
      await fresh.release().catch(() => undefined);
      this.refuse(name, (err as Error).message, true);
      return;
    }
    this.name = name;
    this.served(name, 'model loaded');
  }

  /** Served, again: the new version replaces the old, which is retired once no batch uses it. */
  private async replace(fresh: R, current: string): Promise<void> {
    if (fresh.card.name !== current) {
      await fresh.release().catch(() => undefined);
      this.refuse(current, `the card renames the model '${current}' to '${fresh.card.name}'; restart to rename`);
      return;
    }
    const old = this.scope.registry.replace({ name: current, dir: this.dir, runtime: fresh });
    this.served(current, 'model reloaded');
    await this.scope.opts
      .retire(old.runtime)
      .catch((err: unknown) =>
        this.scope.opts.logger.warn(
          { model: current, err: (err as Error).message },
          'releasing the previous version failed',
        ),
      );
  }

  /** The folder serves `model` now: logged and reported, and the folders its name kept out are tried again. */
  private served(model: string, message: string): void {
    this.scope.opts.logger.info({ model, dir: this.dir }, message);
    this.outcome();
    this.scope.opts.onReload?.(model, true);
    this.scope.settled(this.dir);
  }

  /** Not served: logged and reported with `reason`; the previous version, if any, keeps serving. */
  private refuse(model: string | undefined, why: string, clash = false): void {
    const reason = clip(why, REFUSAL_CHARS);
    this.scope.opts.logger.error(
      { model, dir: this.dir, err: reason },
      this.name === undefined
        ? 'model folder refused; the other models are served'
        : 'model reload refused; the previous version keeps serving',
    );
    this.outcome(reason, clash);
    this.scope.opts.onReload?.(model ?? this.dir, false);
  }

  /** Every attempt ends here: with a refusal's reason, or without one when the folder serves or holds no model. */
  private outcome(refusal?: string, clash = false): void {
    this.clash = clash;
    this.scope.opts.onOutcome?.(this.dir, refusal);
  }

  private warn(err: Error, what: string): void {
    this.scope.opts.logger.warn({ model: this.name, dir: this.dir, err: err.message }, what);
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
