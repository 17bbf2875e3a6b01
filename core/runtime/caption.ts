/**
 * Runs an exported frost caption model (encoder graph: pixels → decoder state and memory; decoder-
 * step graph; model card). Isomorphic, like seq2seq.ts, whose machinery it reuses: the sessions,
 * the serialised runs, the decoder step and row reordering, and core/decode's searches all come
 * from {@link Seq2SeqRuntime}; this file only feeds images to the encoder.
 *
 * Images arrive preprocessed: each a [3, size, size] Float32Array made by core/image/preprocess.ts
 * with the card's `image` spec (`preprocessRgba(rgba, w, h, runtime.imageSpec)`), so the server,
 * the CLI and the browser all feed what the model was trained on.
 */
import type { Hypothesis } from '../decode/types.ts';
import type { ModelCard } from './model-card.ts';
import { searchWithHooks } from '../decode/search-hooks.ts';
import { Seq2SeqRuntime, type Seq2SeqRuntimeInit } from './seq2seq.ts';

/** The card's image preprocessing (core/image/preprocess.ts's ImageSpec). */
export type CardImageSpec = NonNullable<ModelCard['image']>;

/** Beam width of {@link CaptionRuntime.caption} unless asked otherwise: the paper's 10. */
export const DEFAULT_CAPTION_BEAM = 10;
/** Words per caption unless asked otherwise: Flickr8k's 99th percentile is 23. */
export const DEFAULT_CAPTION_MAX_LENGTH = 30;

/** Options of {@link CaptionRuntime.caption}. */
export interface CaptionOptions {
  /** Beam width; 1 is greedy. @default 10 */
  beam?: number;
  /** Most words in a caption (</s> not counted). @default 30 */
  maxLength?: number;
}

/** The caption of one image. */
export interface Caption {
  /** Words joined by spaces (the `caption` tokeniser lower-cases and drops punctuation). */
  text: string;
  /** Words (target vocabulary strings), without <s> and </s>; <unk> is kept. */
  tokens: string[];
  /** Length-normalised log-probability, what beam search ranks by. */
  score: number;
}

/** Callbacks of {@link CaptionRuntime.captionEach}; images are numbered as given. */
export interface CaptionHooks {
  /** Once per image, as soon as its search is over (others in the batch may still be decoding). */
  onDone?(image: number, caption: Caption): void;
}

/**
 * An exported caption model ready to run. Create it with {@link CaptionRuntime.create} (bytes or a
 * loader, any ORT module) or, in Node, `loadCaptionModelDir` (load-node.ts).
 *
 * Concurrency: calls may overlap; as in Seq2SeqRuntime, session runs are serialised and requests
 * interleave step by step.
 */
export class CaptionRuntime {
  readonly card: ModelCard;
  /** How clients must preprocess images for this model. */
  readonly imageSpec: CardImageSpec;
  /** The underlying runtime (sessions, decoder step model). */
  readonly runtime: Seq2SeqRuntime;

  private constructor(runtime: Seq2SeqRuntime, imageSpec: CardImageSpec) {
    this.runtime = runtime;
    this.card = runtime.card;
    this.imageSpec = imageSpec;
  }

  /**
   * Creates both sessions and checks them against the card.
   * @throws TypeError when the card is not a caption model's; Error naming the graph file as
   *   Seq2SeqRuntime.create does
   */
  static async create(init: Seq2SeqRuntimeInit): Promise<CaptionRuntime> {
    const spec = captionSpec(init.card);
    return new CaptionRuntime(await Seq2SeqRuntime.create(init), spec);
  }

  /** Wraps a runtime already created for a caption model's card (load-node.ts opens it for both kinds). */
  static fromRuntime(runtime: Seq2SeqRuntime): CaptionRuntime {
    return new CaptionRuntime(runtime, captionSpec(runtime.card));
  }

  /**
   * Captions a batch of images, decoded together.
   * @param images each a normalised [3, size, size] Float32Array (size from {@link imageSpec})
   * @returns one caption per image, in order
   * @throws TypeError / RangeError naming the image or option at fault
   */
  async caption(images: readonly Float32Array[], opts: CaptionOptions = {}): Promise<Caption[]> {
    return this.captionEach(images, opts);
  }

  /**
   * {@link caption} with a callback per image as soon as it is done: same batch, same search, same
   * results. A server uses it to decode many requests as one batch.
   */
  async captionEach(
    images: readonly Float32Array[],
    opts: CaptionOptions = {},
    hooks: CaptionHooks = {},
  ): Promise<Caption[]> {
    const search = this.searchOptions(opts);
    const n = this.checkImages(images);
    if (n === 0) return [];
    const { size } = this.imageSpec;
    const plane = 3 * size * size;
    const pixels = new Float32Array(n * plane);
    images.forEach((im, i) => pixels.set(im, i * plane));
    const rt = this.runtime;
    const ort = rt.ort;
    const initial = await rt.encodeFeeds({ pixels: new ort.Tensor('float32', pixels, [n, 3, size, size]) }, n);
    const toCaption = (list: Hypothesis[], i: number): Caption => {
      if (list.length === 0) throw new Error(`search returned no hypothesis for image ${i}`);
      const { text, tokens, score } = rt.toHypothesis(list[0]);
      return { text, tokens, score };
    };
    const hyps = await searchWithHooks(rt.stepModel, initial, n, search, {
      onDone: hooks.onDone && ((i, list) => hooks.onDone!(i, toCaption(list, i))),
    });
    return hyps.map(toCaption);
  }

  /** Releases both sessions; the runtime is unusable afterwards. */
  release(): Promise<void> {
    return this.runtime.release();
  }

  private searchOptions(opts: CaptionOptions): { beam: number; maxLen: number } {
    if (typeof opts !== 'object' || opts === null) throw new TypeError("caption: 'opts' must be an object");
    const beam = opts.beam ?? DEFAULT_CAPTION_BEAM;
    const maxLen = opts.maxLength ?? DEFAULT_CAPTION_MAX_LENGTH;
    if (!Number.isInteger(beam) || beam < 1)
      throw new RangeError(`caption: 'beam' must be a positive integer, got ${String(opts.beam)}`);
    if (!Number.isInteger(maxLen) || maxLen < 1)
      throw new RangeError(`caption: 'maxLength' must be a positive integer, got ${String(opts.maxLength)}`);
    return { beam, maxLen };
  }

  private checkImages(images: readonly Float32Array[]): number {
    if (!Array.isArray(images)) throw new TypeError('caption: images must be an array of Float32Array');
    const { size } = this.imageSpec;
    const expected = 3 * size * size;
    images.forEach((im, i) => {
      if (!(im instanceof Float32Array))
        throw new TypeError(`caption: images[${i}] must be a Float32Array, got ${describe(im)}`);
      if (im.length !== expected) {
        throw new RangeError(
          `caption: images[${i}] has ${im.length} values; model '${this.card.name}' takes [3, ${size}, ${size}] = ${expected}`,
        );
      }
    });
    return images.length;
  }
}

function captionSpec(card: ModelCard): CardImageSpec {
  if (card.task !== 'caption' || card.image === undefined) {
    throw new TypeError(`model '${card.name}' is a ${card.task} model, not a caption model`);
  }
  return card.image;
}

function describe(v: unknown): string {
  return v === null ? 'null' : typeof v === 'object' ? ((v as object).constructor?.name ?? 'object') : typeof v;
}
