/**
 * The two kinds of request the server batches for seq2seq models: texts for a translation model and
 * preprocessed images for a caption model (lm-batch-kinds.ts has the language models'). Each says
 * which requests may share a batch and how a batch decodes; the queueing is serve/batcher.ts's.
 */
import type { SearchOptions } from '../core/decode/types.ts';
import {
  type Caption,
  type CaptionOptions,
  DEFAULT_CAPTION_BEAM,
  DEFAULT_CAPTION_MAX_LENGTH,
} from '../core/runtime/caption.ts';
import type { Translation } from '../core/runtime/seq2seq.ts';
import type { BatchKind } from './batcher.ts';
import { CaptionUnavailableError } from './decode-errors.ts';
import type { AnyRuntime } from './model-registry.ts';
import type { ModelRuntime } from './model-runtime.ts';

export const TRANSLATION: BatchKind<string, Translation, SearchOptions> = {
  task: 'translation',
  key: (o) =>
    JSON.stringify([
      ...[o.beam ?? 1, o.nBest ?? 1, o.maxLen ?? null, o.lengthPenalty ?? null, o.minLen ?? null],
      ...[o.maxLenA ?? null, o.maxLenB ?? null, o.allowUnk ?? false],
    ]),
  decode: (runtime, texts, options, hooks) => runtime.translateEach(texts, options, hooks),
  tokens: (t) => t.tokens.length,
  finalText: (t) => t.text,
};

export const CAPTION: BatchKind<Float32Array, Caption, CaptionOptions> = {
  task: 'caption',
  // The defaults are spelled out so that a request that leaves them out batches with one that names them.
  key: (o) => JSON.stringify([o.beam ?? DEFAULT_CAPTION_BEAM, o.maxLength ?? DEFAULT_CAPTION_MAX_LENGTH]),
  decode: (runtime, images, options, hooks) => {
    assertCaptions(runtime);
    return runtime.captionEach(images, options, { onDone: hooks.onDone });
  },
  tokens: (c) => c.tokens.length,
};

/**
 * Checks that a caption model's runtime can caption.
 * @throws CaptionUnavailableError (501 FROST_ERR_CAPTION_UNAVAILABLE over HTTP) for one without captionEach: a bare
 *   Seq2SeqRuntime that an embedder registered instead of an InProcessRuntime
 */
export function assertCaptions(
  runtime: AnyRuntime,
  name = runtime.card.name,
): asserts runtime is ModelRuntime & Required<Pick<ModelRuntime, 'captionEach'>> {
  if (!('captionEach' in runtime) || !runtime.captionEach) throw new CaptionUnavailableError(name);
}
