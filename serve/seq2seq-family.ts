/**
 * The serve side of the seq2seq family (translation and captioning): an InProcessRuntime in its thread, which
 * decodes `translate` and `caption` batches, and the `models` and `default` of `/v1/models`.
 */
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { ModelSummary } from '../core/wire.ts';
import { InProcessRuntime } from './in-process-runtime.ts';
import { registerServedFamily } from './served-family.ts';

registerServedFamily<InProcessRuntime>('seq2seq', {
  noun: 'a translation or caption model',
  load: (dir, opts) => InProcessRuntime.load(dir, opts),
  warm: async (runtime) => {
    const size = runtime.card.image?.size;
    if (size === undefined) await runtime.translateEach(['a'], { beam: 1, maxLen: 2 });
    else await runtime.captionEach([new Float32Array(3 * size * size)], { beam: 1, maxLength: 1 });
  },
  batches: {
    translate: (runtime, msg, thread) => {
      const { id } = msg;
      thread.settle(
        id,
        runtime.translateEach(msg.texts, msg.options, {
          prefixInputs: new Set(msg.prefixInputs),
          onPrefix: (input, text) => thread.post({ type: 'prefix', id, input, text }),
          onDone: (input, translation) => thread.post({ type: 'done', id, input, translation }),
        }),
      );
    },
    caption: (runtime, msg, thread) => {
      const { id } = msg;
      thread.settle(
        id,
        runtime.captionEach(msg.images, msg.options, {
          onDone: (input, caption) => thread.post({ type: 'captioned', id, input, caption }),
        }),
      );
    },
  },
  listing: { key: 'models', defaultKey: 'default', always: true, summarise },
  loadedMessage: 'model loaded',
});

/** The card without its token lists, which can be tens of thousands of strings. */
function summarise(card: ModelCard): ModelSummary {
  const { source, target, ...rest } = card;
  return {
    ...rest,
    ...(source ? { source: { lang: source.lang, size: source.tokens.length } } : {}),
    target: { lang: target.lang, size: target.tokens.length },
  };
}
