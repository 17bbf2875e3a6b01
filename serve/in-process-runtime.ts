/**
 * A model decoded on the calling thread: a {@link ModelRuntime} over a `Seq2SeqRuntime`, which
 * also captions when the card is a caption model's. The server decodes in worker threads instead
 * (serve/worker-runtime.ts); this one is what `ModelRegistry.load` uses by default, for tests and
 * embedders that mount the app themselves.
 */
import type { SearchOptions } from '../core/decode/types.ts';
import { type Caption, type CaptionHooks, type CaptionOptions, CaptionRuntime } from '../core/runtime/caption.ts';
import { loadModelDir, type LoadModelOptions } from '../core/runtime/load-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { Seq2SeqRuntime, TranslateHooks, Translation } from '../core/runtime/seq2seq.ts';
import type { ModelRuntime } from './model-runtime.ts';

export class InProcessRuntime implements ModelRuntime {
  readonly card: ModelCard;
  /** Made on the first captionEach, sharing the sessions of {@link runtime}. */
  private captioner: CaptionRuntime | undefined;

  constructor(readonly runtime: Seq2SeqRuntime) {
    this.card = runtime.card;
  }

  /**
   * Loads a model directory of either task with onnxruntime-node.
   * @throws Error naming the file of a missing or corrupt model, as `loadModelDir` does
   */
  static async load(dir: string, opts: LoadModelOptions = {}): Promise<InProcessRuntime> {
    return new InProcessRuntime(await loadModelDir(dir, opts));
  }

  /** @throws TypeError for a caption model (its encoder reads images) */
  translateEach(texts: readonly string[], options?: SearchOptions, hooks?: TranslateHooks): Promise<Translation[]> {
    return this.runtime.translateEach(texts, options, hooks);
  }

  /** @throws TypeError for a translation model (its encoder reads text), as CaptionRuntime says what captions */
  async captionEach(
    images: readonly Float32Array[],
    options?: CaptionOptions,
    hooks?: CaptionHooks,
  ): Promise<Caption[]> {
    this.captioner ??= CaptionRuntime.fromRuntime(this.runtime);
    return this.captioner.captionEach(images, options, hooks);
  }

  release(): Promise<void> {
    return this.runtime.release();
  }
}
