/**
 * What the server needs of a loaded model: its card, batched decoding with per-input hooks (text for
 * translation models, preprocessed images for caption models), and release. `frost serve` decodes
 * in worker threads ({@link WorkerRuntime}); {@link InProcessRuntime} decodes on the calling thread,
 * which lets tests and embedders mount the app on a runtime they built. A bare `Seq2SeqRuntime` is
 * a ModelRuntime too, for translation only.
 */
import type { SearchOptions } from '../core/decode/types.ts';
import type { Caption, CaptionHooks, CaptionOptions } from '../core/runtime/caption.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { TranslateHooks, Translation } from '../core/runtime/seq2seq.ts';

export interface ModelRuntime {
  readonly card: ModelCard;
  /** Translates a batch (translation models); the contract of `Seq2SeqRuntime.translateEach`. */
  translateEach(texts: readonly string[], options?: SearchOptions, hooks?: TranslateHooks): Promise<Translation[]>;
  /**
   * Captions a batch of images (caption models); the contract of `CaptionRuntime.captionEach`.
   * Each image is a [3, size, size] Float32Array made with the card's `image` spec. Their buffers
   * may be transferred to a decode thread, which detaches them here: do not use them afterwards.
   * Optional only so that a bare `Seq2SeqRuntime` still fits; the server's runtimes have it.
   */
  captionEach?(images: readonly Float32Array[], options?: CaptionOptions, hooks?: CaptionHooks): Promise<Caption[]>;
  /** Lets running batches finish, then frees the sessions. */
  release(): Promise<void>;
}
