/**
 * What the server needs of a loaded language model: its card, batched scoring and completion with
 * per-row hooks, and release. `frost serve` runs them in decode threads (a `WorkerRuntime` of an LM
 * directory, serve/worker-runtime.ts); an `LmRuntime` (core/runtime/lm.ts) runs them on the calling
 * thread and is one too, for tests and embedders.
 */
import type { Completion, CompletionRequest, LmBatchHooks, LmScore } from '../core/runtime/lm.ts';
import type { LmCard } from '../core/runtime/lm-card.ts';

/** Per-row hooks of a language-model batch on the server. */
export interface LmServeHooks<Out> extends LmBatchHooks<Out> {
  /**
   * Calls `listener` with each row whose request goes while the batch runs: the push form of
   * `cancelled`, which a batch running in another thread cannot call.
   */
  onCancel?(listener: (row: number) => void): void;
}

export interface LmCompleteHooks extends LmServeHooks<Completion> {
  /** Each generated token of a row as it is picked (streaming). */
  onToken?(row: number, token: string): void;
  /**
   * The rows whose tokens `onToken` wants (all when absent); a runtime in another thread sends
   * only theirs across.
   */
  streamRows?: ReadonlySet<number>;
}

export interface LmModelRuntime {
  readonly card: LmCard;
  /** Scores texts as one batch; the contract of `LmRuntime.scoreEach`. */
  scoreEach(texts: readonly string[], hooks?: LmServeHooks<LmScore>): Promise<LmScore[]>;
  /** Completes prompts as one batch; the contract of `LmRuntime.completeEach`. */
  completeEach(requests: readonly CompletionRequest[], hooks?: LmCompleteHooks): Promise<Completion[]>;
  /** Lets running batches finish, then frees the sessions. */
  release(): Promise<void>;
}
