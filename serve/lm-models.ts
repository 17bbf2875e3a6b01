import { loadLmModelDir } from '../core/runtime/load-lm-node.ts';
import type { Completion, CompletionRequest, LmScore } from '../core/runtime/lm.ts';
import {
  Batcher,
  type BatchKind,
  type BatchingOptions,
  type BatchObserver,
  DEFAULT_BATCHING,
  type SubmitOptions,
} from './batcher.ts';
import { LM_COMPLETE, LM_SCORE } from './lm-batch-kinds.ts';
import { clip, HttpError } from './errors.ts';
import { findModelDirs, folderFamily } from './model-folders.ts';
import type { LmModelRuntime } from './lm-model-runtime.ts';

/**
 * The language models a server answers `/v1/complete` and `/v1/score` with. Concurrent requests to
 * a model are batched as the seq2seq routes' are (serve/batcher.ts, with the same {@link BatchingOptions}):
 * one batcher per model and kind (lm-batch-kinds.ts), rows of different lengths in one step run.
 * `frost serve` runs each model in its decode threads (`WorkerRuntime.startLm`, the `loader` option);
 * without a loader a model runs on the calling thread (an LmRuntime), for tests and embedders.
 */
export interface LanguageModelEntry {
  name: string;
  dir?: string;
  runtime: LmModelRuntime;
}

export interface LanguageModelsOptions {
  /** Dynamic batching per model and kind (score, complete); unset fields keep {@link DEFAULT_BATCHING}. */
  batching?: Partial<BatchingOptions>;
  /** The batch-size and queue metrics of a model (ServeMetrics.observer). */
  observer?: (model: string) => BatchObserver;
  defaultModel?: string;
}

export class LanguageModels {
  private readonly models = new Map<string, LanguageModelEntry>();
  private readonly scorers = new Map<string, Batcher<string, LmScore, null, LmModelRuntime>>();
  private readonly completers = new Map<string, Batcher<CompletionRequest, Completion, null, LmModelRuntime>>();
  private defaultModel: string | undefined;
  readonly batching: BatchingOptions;

  constructor(
    entries: readonly LanguageModelEntry[],
    private readonly opts: LanguageModelsOptions = {},
  ) {
    for (const e of entries) this.insert(e);
    const wanted = opts.defaultModel;
    this.defaultModel =
      wanted !== undefined && this.models.has(wanted) ? wanted : entries.length === 1 ? entries[0].name : undefined;
    const given = Object.entries(opts.batching ?? {}).filter(([, value]) => value !== undefined);
    this.batching = { ...DEFAULT_BATCHING, ...Object.fromEntries(given) };
  }

  /**
   * The language models in `dir` (a model directory or a directory of them); other models are skipped.
   * @throws Error naming the file of a model that cannot be loaded (the ones loaded before it are released)
   */
  static async load(
    dir: string,
    opts: LanguageModelsOptions & {
      intraOpNumThreads?: number;
      /** Loads one model directory. @default on the calling thread (`loadLmModelDir`) */
      loader?: (dir: string) => Promise<LmModelRuntime>;
    } = {},
  ): Promise<LanguageModels> {
    // The same folders, links followed, as ModelRegistry.load finds (a missing or empty `dir` throws there too).
    const dirs = await findModelDirs(dir);
    const loader = opts.loader ?? ((d: string) => loadLmModelDir(d, opts));
    const entries: LanguageModelEntry[] = [];
    try {
      for (const d of dirs) {
        if ((await folderFamily(d)) !== 'lm') continue;
        const runtime = await loader(d);
        entries.push({ name: runtime.card.name, dir: d, runtime });
      }
      return new LanguageModels(entries, opts);
    } catch (err) {
      await Promise.all(entries.map((e) => e.runtime.release().catch(() => undefined)));
      throw err;
    }
  }

  /** The model used when a request names none, if any. */
  get defaultName(): string | undefined {
    return this.defaultModel;
  }

  /**
   * Serves a language model loaded after start-up (`--watch`) under its own name. It becomes the default only
   * when it is the one language model, as a lone one is at start-up; a default already set stays.
   * @throws Error when a language model of that name is loaded
   */
  add(entry: LanguageModelEntry): void {
    this.insert(entry);
    if (this.models.size === 1) this.defaultModel ??= entry.name;
  }

  list(): LanguageModelEntry[] {
    return this.names.map((name) => this.models.get(name)!);
  }

  /**
   * Swaps in a reloaded model under its existing name (`--watch`); batches from now on use the new runtime.
   * @returns the model it replaced (release it once {@link idle} for its runtime resolves)
   * @throws Error when no language model of that name is loaded
   */
  replace(model: LanguageModelEntry): LanguageModelEntry {
    const old = this.models.get(model.name);
    if (!old) throw new Error(`cannot replace '${model.name}': no language model of that name is loaded`);
    this.models.set(model.name, model);
    return old;
  }

  get names(): string[] {
    return [...this.models.keys()].sort();
  }

  /** @throws HttpError naming the loaded language models when `name` is none of them */
  get(name: string | undefined): LanguageModelEntry {
    const wanted = name ?? this.defaultName;
    const available = this.names.join(', ') || '(none)';
    if (wanted === undefined) throw new HttpError('FROST_ERR_NO_DEFAULT_MODEL', { available });
    const model = this.models.get(wanted);
    if (!model) throw new HttpError('FROST_ERR_UNKNOWN_MODEL', { model: clip(wanted), available });
    return model;
  }

  /**
   * Scores `text` with model `name`, batched with other requests to it.
   * @throws QueueFullError (synchronously) when the model's queue is full
   */
  score(name: string, text: string, sub: SubmitOptions = {}): Promise<LmScore> {
    return this.batcher(this.scorers, name, LM_SCORE)
      .submit([text], null, sub)
      .then((r) => r[0]);
  }

  /**
   * Completes a prompt with model `name`, batched with other requests to it; `sub.onPrefix` gets each token.
   * @throws QueueFullError (synchronously) when the model's queue is full
   */
  complete(name: string, request: CompletionRequest, sub: SubmitOptions = {}): Promise<Completion> {
    return this.batcher(this.completers, name, LM_COMPLETE)
      .submit([request], null, sub)
      .then((r) => r[0]);
  }

  /** Resolves once nothing decodes with `runtime` (or, without it, once every queue is empty). */
  async idle(runtime?: LmModelRuntime): Promise<void> {
    await Promise.all([...this.scorers.values(), ...this.completers.values()].map((b) => b.idle(runtime)));
  }

  /** Lets running batches finish, then frees every model's session. */
  async close(): Promise<void> {
    await this.idle();
    await Promise.all([...this.models.values()].map((m) => m.runtime.release()));
  }

  private insert(e: LanguageModelEntry): void {
    const clash = this.models.get(e.name);
    if (clash) {
      throw new Error(
        `two language models are named '${e.name}' (${clash.dir ?? '?'} and ${e.dir ?? '?'}); model names must be unique`,
      );
    }
    this.models.set(e.name, e);
  }

  private batcher<In, Out>(
    batchers: Map<string, Batcher<In, Out, null, LmModelRuntime>>,
    name: string,
    kind: BatchKind<In, Out, null, LmModelRuntime>,
  ): Batcher<In, Out, null, LmModelRuntime> {
    let b = batchers.get(name);
    if (!b) {
      // The runtime is read at each batch, so a model reloaded by --watch takes over from the next batch on.
      b = new Batcher(kind, () => this.get(name).runtime, this.batching, this.opts.observer?.(name));
      batchers.set(name, b);
    }
    return b;
  }
}
