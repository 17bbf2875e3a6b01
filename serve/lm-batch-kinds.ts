/**
 * The two kinds of language-model request the server batches (serve/batcher.ts): texts to score and
 * prompts to complete. Requests with different sampling settings share a batch, since each row
 * carries its own (a seeded row is the same alone or batched); a streamed row's tokens go out
 * through the batcher's prefix hook, one token per call. The runtime is an LmRuntime on the calling
 * thread or a pool of decode threads (serve/worker-runtime.ts); both drop a cancelled row between steps.
 */
import type { Completion, CompletionRequest, LmScore } from '../core/runtime/lm.ts';
import type { BatchKind } from './batcher.ts';
import type { LmModelRuntime } from './lm-model-runtime.ts';

export const LM_SCORE: BatchKind<string, LmScore, null, LmModelRuntime> = {
  task: 'lm',
  key: () => 'score',
  decode: (runtime, texts, _options, hooks) =>
    runtime.scoreEach(texts, { cancelled: hooks.cancelled, onCancel: hooks.onCancel, onDone: hooks.onDone }),
  tokens: (s) => s.tokenLogProbs.length,
};

export const LM_COMPLETE: BatchKind<CompletionRequest, Completion, null, LmModelRuntime> = {
  task: 'lm',
  key: () => 'complete',
  decode: (runtime, requests, _options, hooks) =>
    runtime.completeEach(requests, {
      cancelled: hooks.cancelled,
      onCancel: hooks.onCancel,
      onDone: hooks.onDone,
      streamRows: hooks.prefixInputs,
      onToken: (row, token) => {
        if (hooks.prefixInputs.has(row)) hooks.onPrefix(row, token);
      },
    }),
  tokens: (c) => c.tokens.length,
};
