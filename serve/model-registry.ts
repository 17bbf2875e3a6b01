import { familyOf, type ModelFamily } from '../core/runtime/card-kinds.ts';
import type { LoadModelOptions } from '../core/runtime/load-node.ts';
import { clip, HttpError } from './errors.ts';
import type { LmModelRuntime } from './lm-model-runtime.ts';
import { findModelDirs, folderFamily } from './model-folders.ts';
import type { ModelRuntime } from './model-runtime.ts';
import { loadInProcess } from './served-families.ts';

/** A runtime of any family of model (the server's are `WorkerRuntime`s). */
export type AnyRuntime = ModelRuntime | LmModelRuntime;

/** One loaded model, known by its card's name. */
export interface RegisteredModel<R extends AnyRuntime = AnyRuntime> {
  readonly name: string;
  /** The directory it was loaded from (for logs; never sent to clients). */
  readonly dir?: string;
  readonly runtime: R;
}

/** Options of {@link ModelRegistry.load}. */
export interface RegistryLoadOptions extends LoadModelOptions {
  /** The model used when a request names none; required when more than one model of its family is loaded. */
  defaultModel?: string;
  /** Only the models of this family; folders whose card names another are skipped. @default every family */
  family?: ModelFamily;
  /**
   * Loads one model directory (the server passes one that starts decode threads).
   * @default {@link loadInProcess} with these options (decoding on this thread)
   */
  loader?: (dir: string) => Promise<AnyRuntime>;
}

/**
 * The models a server answers with, of every family, by card name: names are unique across families. A request
 * looks its model up among its route's family (`/v1/translate` and `/v1/caption` among the seq2seq models,
 * `/v1/score` and `/v1/complete` among the language models), or among all of them when it names no family.
 * Each of those has its own default: `defaultModel` where it is one of them, else the lone model there.
 */
export class ModelRegistry {
  private readonly models = new Map<string, RegisteredModel>();
  /** The default of each family, and (under `undefined`) of the whole registry. */
  private readonly defaults = new Map<ModelFamily | undefined, string>();

  /**
   * @throws Error when two models share a name or `defaultModel` names none of them
   */
  constructor(models: readonly RegisteredModel[], defaultModel?: string) {
    for (const m of models) this.insert(m);
    if (defaultModel !== undefined && !this.models.has(defaultModel)) {
      throw new Error(`--default-model '${defaultModel}' is not a loaded model; loaded: ${this.listNames()}`);
    }
    for (const scope of new Set(models.flatMap(scopesOf))) {
      const inScope = this.names(scope);
      const chosen = inScope.find((name) => name === defaultModel) ?? (inScope.length === 1 ? inScope[0] : undefined);
      if (chosen !== undefined) this.defaults.set(scope, chosen);
    }
  }

  /**
   * Loads `modelsDir` when it holds a model-card.json, otherwise every subdirectory that does.
   * @throws Error naming the directory when it holds no model, or naming the file of a corrupt one (the ones
   *   loaded before it are released)
   */
  static async load(modelsDir: string, opts: RegistryLoadOptions = {}): Promise<ModelRegistry> {
    const dirs: string[] = [];
    for (const dir of await findModelDirs(modelsDir)) {
      // A card that names no known family is not skipped: its loader says what is wrong with it.
      const family = opts.family && (await folderFamily(dir));
      if (family === undefined || family === opts.family) dirs.push(dir);
    }
    const loader = opts.loader ?? ((dir: string) => loadInProcess(dir, opts));
    const loaded: RegisteredModel[] = [];
    try {
      for (const dir of dirs) {
        const runtime = await loader(dir);
        loaded.push({ name: runtime.card.name, dir, runtime });
      }
      return new ModelRegistry(loaded, opts.defaultModel);
    } catch (err) {
      await Promise.all(loaded.map((m) => m.runtime.release().catch(() => undefined)));
      throw err;
    }
  }

  /** The model used when a request to `family` (or, without it, to any model) names none, if any. */
  defaultName(family?: ModelFamily): string | undefined {
    return this.defaults.get(family);
  }

  /** Names of the loaded models of `family` (every model without it), sorted. */
  names(family?: ModelFamily): string[] {
    return this.list(family).map((m) => m.name);
  }

  /** The loaded models of `family` (every model without it), sorted by name. */
  list(family?: ModelFamily): RegisteredModel[] {
    const all = [...this.models.keys()].sort().map((name) => this.models.get(name)!);
    return family === undefined ? all : all.filter((m) => familyOf(m.runtime.card) === family);
  }

  /**
   * The model of `family` called `name`, or its default when `name` is undefined; without `family`, of any family.
   * @throws HttpError FROST_ERR_UNKNOWN_MODEL (404) or FROST_ERR_NO_DEFAULT_MODEL (400), listing the names there
   */
  get(name: string | undefined, family?: ModelFamily): RegisteredModel {
    const wanted = name ?? this.defaultName(family);
    const available = () => this.listNames(family);
    if (wanted === undefined) throw new HttpError('FROST_ERR_NO_DEFAULT_MODEL', { available: available() });
    const model = this.models.get(wanted);
    if (!model || (family !== undefined && familyOf(model.runtime.card) !== family))
      throw new HttpError('FROST_ERR_UNKNOWN_MODEL', { model: clip(wanted), available: available() });
    return model;
  }

  /**
   * Serves a model loaded after start-up (`--watch`) under its own name. It becomes the default of its family
   * only when it is the one model there, as a lone model is at start-up; a default already set stays.
   * @throws Error when a model of that name is loaded
   */
  add(model: RegisteredModel): void {
    this.insert(model);
    for (const scope of scopesOf(model))
      if (!this.defaults.has(scope) && this.list(scope).length === 1) this.defaults.set(scope, model.name);
  }

  /**
   * Swaps in a reloaded model under its existing name; requests from now on get the new one.
   * @returns the model it replaced (still usable: release it once its in-flight work is done)
   * @throws Error when no model of that name is loaded
   */
  replace(model: RegisteredModel): RegisteredModel {
    const old = this.models.get(model.name);
    if (!old) throw new Error(`cannot replace '${model.name}': no model of that name is loaded`);
    this.models.set(model.name, model);
    return old;
  }

  /** Releases every model's sessions. */
  async close(): Promise<void> {
    await Promise.all([...this.models.values()].map((m) => m.runtime.release()));
  }

  private insert(m: RegisteredModel): void {
    const clash = this.models.get(m.name);
    if (clash) {
      throw new Error(
        `two models are named '${m.name}' (${clash.dir ?? '?'} and ${m.dir ?? '?'}); model names must be unique`,
      );
    }
    this.models.set(m.name, m);
  }

  private listNames(family?: ModelFamily): string {
    return this.names(family).join(', ') || '(none)';
  }
}

/** Where a model may be a default: among its family's models, and among all. */
function scopesOf(model: RegisteredModel): Array<ModelFamily | undefined> {
  return [undefined, familyOf(model.runtime.card)];
}
