import type { LoadModelOptions } from '../core/runtime/load-node.ts';
import { clip, HttpError } from './errors.ts';
import { InProcessRuntime } from './in-process-runtime.ts';
import { findModelDirs, folderFamily } from './model-folders.ts';
import type { ModelRuntime } from './model-runtime.ts';

/** One loaded model, known by its card's name. */
export interface RegisteredModel {
  readonly name: string;
  /** The directory it was loaded from (for logs; never sent to clients). */
  readonly dir?: string;
  readonly runtime: ModelRuntime;
}

/** Options of {@link ModelRegistry.load}. */
export interface RegistryLoadOptions extends LoadModelOptions {
  /** The model used when a request names none; required when more than one model is loaded. */
  defaultModel?: string;
  /**
   * Loads one model directory (the server passes one that starts decode threads).
   * @default {@link InProcessRuntime.load} with these options (decoding on this thread)
   */
  loader?: (dir: string) => Promise<ModelRuntime>;
}

/**
 * The models a server answers with, by card name. With one model loaded it is the default;
 * with several, only `defaultModel` (if given) is.
 */
export class ModelRegistry {
  private readonly models = new Map<string, RegisteredModel>();
  private defaultModel: string | undefined;

  /**
   * @throws Error when two models share a name or `defaultModel` names none of them
   */
  constructor(models: readonly RegisteredModel[], defaultModel?: string) {
    for (const m of models) this.insert(m);
    if (defaultModel !== undefined && !this.models.has(defaultModel)) {
      throw new Error(`--default-model '${defaultModel}' is not a loaded model; loaded: ${this.listNames()}`);
    }
    this.defaultModel = defaultModel ?? (this.models.size === 1 ? models[0].name : undefined);
  }

  /** The model used when a request names none, if any. */
  get defaultName(): string | undefined {
    return this.defaultModel;
  }

  /**
   * Serves a model loaded after start-up (`--watch`) under its own name. It becomes the default only when it
   * is the one model, as a lone model is at start-up; a default already set stays.
   * @throws Error when a model of that name is loaded
   */
  add(model: RegisteredModel): void {
    this.insert(model);
    if (this.models.size === 1) this.defaultModel ??= model.name;
  }

  /**
   * Loads `modelsDir` when it holds a model-card.json, otherwise every subdirectory that does.
   * @throws Error naming the directory when it holds no model, or naming the file of a corrupt one
   */
  static async load(modelsDir: string, opts: RegistryLoadOptions = {}): Promise<ModelRegistry> {
    // Language models (one step graph, no encoder) are served by lm-models.ts, not through this registry.
    const dirs: string[] = [];
    for (const dir of await findModelDirs(modelsDir)) if ((await folderFamily(dir)) === 'seq2seq') dirs.push(dir);
    const loader = opts.loader ?? ((dir: string) => InProcessRuntime.load(dir, opts));
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

  /** Names of the loaded models, sorted. */
  get names(): string[] {
    return [...this.models.keys()].sort();
  }

  /** The loaded models, sorted by name. */
  list(): RegisteredModel[] {
    return this.names.map((n) => this.models.get(n)!);
  }

  /**
   * The model called `name`, or the default one when `name` is undefined.
   * @throws HttpError FROST_ERR_UNKNOWN_MODEL (404) or FROST_ERR_NO_DEFAULT_MODEL (400), listing the names
   */
  get(name: string | undefined): RegisteredModel {
    const wanted = name ?? this.defaultName;
    if (wanted === undefined) throw new HttpError('FROST_ERR_NO_DEFAULT_MODEL', { available: this.listNames() });
    const model = this.models.get(wanted);
    if (!model) throw new HttpError('FROST_ERR_UNKNOWN_MODEL', { model: clip(wanted), available: this.listNames() });
    return model;
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

  private listNames(): string {
    return this.names.join(', ') || '(none)';
  }
}
