/**
 * The serve side of the language-model family: an LmRuntime in its thread, which decodes `score` and `complete`
 * batches and drops a row whose request has gone between two steps, and the `language_models` and
 * `default_language_model` of `/v1/models`, left out when none is loaded.
 */
import { loadLmModelDir } from '../core/runtime/load-lm-node.ts';
import type { LmCard } from '../core/runtime/lm-card.ts';
import type { LmRuntime } from '../core/runtime/lm.ts';
import type { LmModelSummary } from '../core/wire.ts';
import { registerServedFamily } from './served-family.ts';

registerServedFamily<LmRuntime>('lm', {
  noun: 'a language model',
  // A language model's sessions run on the CPU: its step graph is small, and one row per request.
  load: (dir, { intraOpNumThreads, graphs }) => loadLmModelDir(dir, { intraOpNumThreads, graphs }),
  warm: async (runtime) => {
    await runtime.scoreEach(['a']);
  },
  batches: {
    score: (runtime, msg, thread) => {
      const { id } = msg;
      const dropped = thread.dropped(id);
      thread.settle(
        id,
        runtime.scoreEach(msg.texts, {
          cancelled: (row) => dropped.has(row),
          onDone: (input, score) => thread.post({ type: 'scored', id, input, score }),
        }),
      );
    },
    complete: (runtime, msg, thread) => {
      const { id } = msg;
      const dropped = thread.dropped(id);
      const streamed = new Set(msg.stream);
      thread.settle(
        id,
        runtime.completeEach(msg.requests, {
          cancelled: (row) => dropped.has(row),
          onToken: (input, token) => {
            if (streamed.has(input)) thread.post({ type: 'prefix', id, input, text: token });
          },
          onDone: (input, completion) => thread.post({ type: 'completed', id, input, completion }),
        }),
      );
    },
  },
  listing: { key: 'language_models', defaultKey: 'default_language_model', always: false, summarise },
  loadedMessage: 'language model loaded (POST /v1/complete, /v1/score)',
});

/** The card without its token list. */
function summarise(card: LmCard): LmModelSummary {
  const { target, ...rest } = card;
  return { ...rest, target: { lang: target.lang, size: target.tokens.length } };
}
