/**
 * What `frost serve` holds of its models: the one registry of every family (model-registry.ts) and the one
 * pool of batchers (batcher-pool.ts) that every route decodes through, the folders it refused, and the
 * release of a version `--watch` replaced, once no batch uses it.
 */
import { basename, relative } from 'node:path';
import { familyOf, type ModelFamily } from '../core/runtime/card-kinds.ts';
import type { FolderRefusal } from '../core/wire.ts';
import type { BatchingOptions } from './batcher.ts';
import { BatcherPool } from './batcher-pool.ts';
import type { ServeMetrics } from './metrics.ts';
import { type AnyRuntime, ModelRegistry, type RegisteredModel } from './model-registry.ts';

/** One loaded model, known by its card's name. */
export interface ServedModel extends RegisteredModel {
  /** The directory it was loaded from (for logs; never sent to clients). */
  readonly dir: string;
}

/** Options of {@link ServedModels}. */
export interface ServedModelsOptions {
  /** The model used when a request names none; it may name a model of any family. */
  defaultModel?: string;
  /** Dynamic batching, every model and kind of request alike. */
  batching: Partial<BatchingOptions>;
  metrics: ServeMetrics;
}

export class ServedModels {
  /** Every loaded model; each route looks its models up among its family's. */
  readonly registry: ModelRegistry;
  /** The batchers of every model and kind of request. */
  readonly pool: BatcherPool;
  /** Folders whose current contents could not be loaded (at start-up, or by `--watch`), by path. */
  private readonly refusals = new Map<string, FolderRefusal>();

  /**
   * @throws Error when two models share a name, or `defaultModel` names no loaded model
   */
  constructor(models: readonly ServedModel[], opts: ServedModelsOptions) {
    this.registry = new ModelRegistry(models, opts.defaultModel);
    this.pool = new BatcherPool(this.registry, opts.batching, opts.metrics);
  }

  /** The folders refused, by folder: what `/readyz` and `/v1/models` list. */
  get refused(): FolderRefusal[] {
    return [...this.refusals.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, r]) => r);
  }

  /**
   * Notes that `dir` (under `modelsDir`) was refused for `reason`, or with no reason that it loads again. Clients
   * are told the folder's path under `--models`, never the server's own paths.
   */
  noteRefusal(modelsDir: string, dir: string, reason?: string): void {
    if (reason === undefined) {
      this.refusals.delete(dir);
      return;
    }
    const under = (path: string) => relative(modelsDir, path) || basename(path);
    const folder = under(dir);
    // A name clash names the served folder too, which is told by its path under --models as well.
    const served = this.registry.list().flatMap((m) => (m.dir === undefined ? [] : [m.dir]));
    const told = served.reduce((text, path) => text.split(path).join(under(path)), reason.split(dir).join(folder));
    this.refusals.set(dir, { folder, reason: told });
  }

  /** Whether `dir`'s contents on disk are a version that was refused (the model it served, if any, still serves). */
  refusedOnDisk(dir: string): boolean {
    return this.refusals.has(dir);
  }

  /** The family of the model loaded from `dir`, which a reload of it must keep. */
  familyAt(dir: string): ModelFamily | undefined {
    const model = this.registry.list().find((m) => m.dir === dir);
    return model && familyOf(model.runtime.card);
  }

  /** Waits until no batch uses `old` (a replaced runtime), then releases it. */
  async retire(old: AnyRuntime): Promise<void> {
    await this.pool.idle(old);
    await old.release();
  }

  /** Lets running batches finish, then releases every model. */
  async close(): Promise<void> {
    // Requests whose clients left may still be decoding; sessions must outlive their runs.
    await this.pool.idle();
    await this.registry.close();
  }
}
