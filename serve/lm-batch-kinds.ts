/**
 * The two kinds of language-model request the server batches (serve/batcher.ts): texts to score and
 * prompts to complete. Requests with different sampling settings share a batch, since each row
 * carries its own (a seeded row is the same alone or batched); a streamed row's tokens go out
 * through the batcher's prefix hook, one token per call.
 */
import type { Completion, CompletionRequest, LmRuntime, LmScore } from '../core/runtime/lm.ts';
import type { BatchKind } from './batcher.ts';

export const LM_SCORE: BatchKind<string, LmScore, null, LmRuntime> = {
  key: () => 'score',
  decode: (runtime, texts, _options, hooks) => runtime.scoreEach(texts, hooks),
  tokens: (s) => s.tokenLogProbs.length,
};

export const LM_COMPLETE: BatchKind<CompletionRequest, Completion, null, LmRuntime> = {
  key: () => 'complete',
  decode: (runtime, requests, _options, hooks) =>
    runtime.completeEach(requests, {
      cancelled: hooks.cancelled,
      onDone: hooks.onDone,
      onToken: (row, token) => {
        if (hooks.prefixInputs.has(row)) hooks.onPrefix(row, token);
      },
    }),
  tokens: (c) => c.tokens.length,
};
