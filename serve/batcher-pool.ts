/**
 * One {@link Batcher} per loaded model and kind of request, created on first use: every kind (translation,
 * captioning, scoring, completion) of every family of model goes through this one pool.
 */
import type { SearchOptions } from '../core/decode/types.ts';
import type { Translation } from '../core/runtime/seq2seq.ts';
import { TRANSLATION } from './batch-kinds.ts';
import {
  Batcher,
  type BatchKind,
  type BatchObserver,
  DEFAULT_BATCHING,
  type BatchingOptions,
  kindFamily,
} from './batcher.ts';
import type { AnyRuntime, ModelRegistry } from './model-registry.ts';

/** Kinds and their batchers are kept untyped here; {@link BatcherPool.for} gives them their types back. */
type AnyKind = BatchKind<unknown, unknown, unknown, unknown>;

/** Where a model's batchers report their batches and queue (ServeMetrics is one). */
export interface BatchObservers {
  observer(model: string): BatchObserver;
}

export class BatcherPool {
  /** Per kind, per model name: a request never waits in another model's queue, nor in another kind's. */
  private readonly batchers = new Map<AnyKind, Map<string, Batcher<unknown, unknown, unknown, unknown>>>();
  readonly options: BatchingOptions;

  constructor(
    private readonly registry: ModelRegistry,
    options: Partial<BatchingOptions> = {},
    private readonly observers?: BatchObservers,
  ) {
    // An option given as undefined (an unset flag) keeps its default.
    const given = Object.entries(options).filter(([, value]) => value !== undefined);
    this.options = { ...DEFAULT_BATCHING, ...Object.fromEntries(given) };
    for (const [key, value] of Object.entries(this.options)) {
      if (!Number.isInteger(value) || value < (key === 'maxWaitMs' ? 0 : 1))
        throw new RangeError(`batching.${key} must be an integer >= ${key === 'maxWaitMs' ? 0 : 1}, got ${value}`);
    }
  }

  /**
   * The batcher of model `name` (which must be loaded, of the kind's family) for one kind of request,
   * translation unless given; it always decodes with the registry's current runtime.
   */
  for(name: string): Batcher<string, Translation, SearchOptions>;
  for<In, Out, Opts, R>(name: string, kind: BatchKind<In, Out, Opts, R>): Batcher<In, Out, Opts, R>;
  for(name: string, kind: AnyKind = TRANSLATION as AnyKind): Batcher<unknown, unknown, unknown, unknown> {
    let byModel = this.batchers.get(kind);
    if (!byModel) this.batchers.set(kind, (byModel = new Map()));
    let b = byModel.get(name);
    if (!b) {
      const family = kindFamily(kind);
      // The runtime is read at each batch, so a model reloaded by --watch takes over from the next batch on.
      b = new Batcher(
        kind,
        () => this.registry.get(name, family).runtime,
        this.options,
        this.observers?.observer(name),
      );
      byModel.set(name, b);
    }
    return b;
  }

  /** Requests waiting, over all models. */
  get depth(): number {
    let n = 0;
    for (const b of this.all()) n += b.depth;
    return n;
  }

  /** Resolves when no batch uses `runtime` (or, without it, when every queue is empty and nothing decodes). */
  async idle(runtime?: AnyRuntime): Promise<void> {
    await Promise.all([...this.all()].map((b) => b.idle(runtime)));
  }

  private *all(): Iterable<Batcher<unknown, unknown, unknown, unknown>> {
    for (const byModel of this.batchers.values()) yield* byModel.values();
  }
}
