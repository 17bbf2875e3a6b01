/**
 * The server's one registry of loaded models, of every kind. Each model is answered by its family's
 * routes (core/runtime/card-kinds.ts): a seq2seq model (translation, captioning) through `registry`
 * and `pool` (`/v1/translate`, `/v1/caption`), a language model through `languageModels`
 * (`/v1/score`, `/v1/complete`). `--watch` reloads and retires any of them through this one object.
 */
import { basename, relative } from 'node:path';
import { type AnyCard, familyOf, type ModelFamily } from '../core/runtime/card-kinds.ts';
import type { FolderRefusal } from '../core/wire.ts';
import type { BatchingOptions } from './batcher.ts';
import { BatcherPool } from './batcher-pool.ts';
import { LanguageModels } from './lm-models.ts';
import type { LmModelRuntime } from './lm-model-runtime.ts';
import type { ServeMetrics } from './metrics.ts';
import { ModelRegistry } from './model-registry.ts';
import type { ModelRuntime } from './model-runtime.ts';

/** A runtime of any kind of model (the server's are `WorkerRuntime`s). */
export type AnyRuntime = ModelRuntime | LmModelRuntime;

/** One loaded model, known by its card's name. */
export interface ServedModel {
  readonly name: string;
  /** The directory it was loaded from (for logs; never sent to clients). */
  readonly dir: string;
  readonly runtime: AnyRuntime;
}

/** Options of {@link ServedModels}. */
export interface ServedModelsOptions {
  /** The model used when a request names none; it may name a model of either family. */
  defaultModel?: string;
  /** Dynamic batching, every model and kind of request alike. */
  batching: Partial<BatchingOptions>;
  metrics: ServeMetrics;
}

/** What differs between the families once a model is loaded: where it is looked up, and whose batches use it. */
interface FamilyRoutes {
  add(model: ServedModel): void;
  replace(model: ServedModel): AnyRuntime;
  /** Resolves once no batch uses `runtime`. */
  idle(runtime: AnyRuntime): Promise<void>;
}

export class ServedModels {
  /** The seq2seq models, for `/v1/translate` and `/v1/caption`. */
  readonly registry: ModelRegistry;
  /** The batchers of the seq2seq models. */
  readonly pool: BatcherPool;
  /** The language models, for `/v1/score` and `/v1/complete`. */
  readonly languageModels: LanguageModels;
  /** Folders whose current contents could not be loaded (at start-up, or by `--watch`), by path. */
  private readonly refusals = new Map<string, FolderRefusal>();
  private readonly models: ServedModel[];
  private readonly routes: Record<ModelFamily, FamilyRoutes>;

  /**
   * @throws Error when two models of a family share a name, or `defaultModel` names no loaded model
   */
  constructor(models: readonly ServedModel[], opts: ServedModelsOptions) {
    this.models = [...models];
    const of = (family: ModelFamily) => models.filter((m) => familyOf(m.runtime.card) === family);
    const lms = of('lm') as Array<ServedModel & { runtime: LmModelRuntime }>;
    this.languageModels = new LanguageModels(lms, {
      defaultModel: opts.defaultModel,
      batching: opts.batching,
      observer: (model) => opts.metrics.observer(model),
    });
    // --default-model may name a language model; the seq2seq models then have no default of their own.
    const seq2seqDefault = this.languageModels.names.includes(opts.defaultModel ?? '') ? undefined : opts.defaultModel;
    this.registry = new ModelRegistry(of('seq2seq') as Array<ServedModel & { runtime: ModelRuntime }>, seq2seqDefault);
    this.pool = new BatcherPool(this.registry, opts.batching, opts.metrics);
    this.routes = {
      seq2seq: {
        add: (m) => this.registry.add(m as ServedModel & { runtime: ModelRuntime }),
        replace: (m) => this.registry.replace(m as ServedModel & { runtime: ModelRuntime }).runtime,
        idle: (runtime) => this.pool.idle(runtime as ModelRuntime),
      },
      lm: {
        add: (m) => this.languageModels.add(m as ServedModel & { runtime: LmModelRuntime }),
        replace: (m) => this.languageModels.replace(m as ServedModel & { runtime: LmModelRuntime }).runtime,
        idle: (runtime) => this.languageModels.idle(runtime as LmModelRuntime),
      },
    };
  }

  /** Every loaded model, by name. */
  list(): ServedModel[] {
    return [...this.models].sort((a, b) => a.name.localeCompare(b.name));
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
    const told = this.models.reduce((text, m) => text.split(m.dir).join(under(m.dir)), reason.split(dir).join(folder));
    this.refusals.set(dir, { folder, reason: told });
  }

  /** The family of the model loaded from `dir`, which a reload of it must keep. */
  familyAt(dir: string): ModelFamily | undefined {
    const model = this.models.find((m) => m.dir === dir);
    return model && familyOf(model.runtime.card);
  }

  /**
   * Serves a model loaded after start-up (`--watch`: a folder refused at start-up, or new, that now loads).
   * @throws Error when a model of its family has its name
   */
  add(model: ServedModel): void {
    this.routes[familyOf(model.runtime.card)].add(model);
    this.models.push(model);
  }

  /**
   * Swaps in a reloaded model under its existing name (`--watch`); requests from now on get the new one.
   * @returns the model it replaced (release it with {@link retire})
   * @throws Error when no model of that name and family is loaded
   */
  replace(model: ServedModel): { runtime: AnyRuntime } {
    const runtime = this.routes[familyOf(model.runtime.card)].replace(model);
    const at = this.models.findIndex((m) => m.runtime === runtime);
    if (at >= 0) this.models[at] = model;
    return { runtime };
  }

  /** Waits until no batch uses `old` (a replaced runtime), then releases it. */
  async retire(old: AnyRuntime): Promise<void> {
    await this.routes[familyOf(old.card as AnyCard)].idle(old);
    await old.release();
  }

  /** Lets running batches finish, then releases every model. */
  async close(): Promise<void> {
    // Requests whose clients left may still be decoding; sessions must outlive their runs.
    await this.pool.idle();
    await this.languageModels.close();
    await this.registry.close();
  }
}
