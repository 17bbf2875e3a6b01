/** One {@link Batcher} per loaded model, created on first use. */
import { Batcher, DEFAULT_BATCHING, type BatchingOptions } from './batcher.ts';
import type { ServeMetrics } from './metrics.ts';
import type { ModelRegistry } from './model-registry.ts';
import type { Seq2SeqRuntime } from '../core/runtime/seq2seq.ts';

export class BatcherPool {
  private readonly batchers = new Map<string, Batcher>();
  readonly options: BatchingOptions;

  constructor(
    private readonly registry: ModelRegistry,
    options: Partial<BatchingOptions> = {},
    private readonly metrics?: ServeMetrics,
  ) {
    this.options = { ...DEFAULT_BATCHING, ...options };
    for (const [key, value] of Object.entries(this.options)) {
      if (!Number.isInteger(value) || value < (key === 'maxWaitMs' ? 0 : 1)) throw new RangeError(`batching.${key} must be an integer >= ${key === 'maxWaitMs' ? 0 : 1}, got ${value}`);
    }
  }

  /** The batcher of model `name` (which must be loaded); it always decodes with the registry's current runtime. */
  for(name: string): Batcher {
    let b = this.batchers.get(name);
    if (!b) {
      b = new Batcher(() => this.registry.get(name).runtime, this.options, this.metrics?.observer(name));
      this.batchers.set(name, b);
    }
    return b;
  }

  /** Requests waiting, over all models. */
  get depth(): number {
    let n = 0;
    for (const b of this.batchers.values()) n += b.depth;
    return n;
  }

  /** Resolves when no batch uses `runtime` (or, without it, when every queue is empty and nothing decodes). */
  async idle(runtime?: Seq2SeqRuntime): Promise<void> {
    await Promise.all([...this.batchers.values()].map((b) => b.idle(runtime)));
  }
}
