/**
 * How a subword model turns normalised text into pieces depends on its SentencePiece `model_type`: BPE merges
 * pairs (bpe-segmenter.ts), unigram takes the Viterbi path (unigram-segmenter.ts). Everything else about a
 * model (the piece list and its checks, byte fallback, the `.model` file, decoding) is shared and lives in
 * {@link SubwordModel}; it picks its segmenter from this registry by the model's kind, so a new model type is
 * one new file that registers itself.
 *
 * Isomorphic: no Node APIs.
 */
import { Registry } from '../registry.ts';
import type { SentencePieceObject } from './sentencepiece-proto.ts';
import type { SubwordKind } from './subword-spec.ts';

/** The word-boundary mark SentencePiece writes for a space (U+2581). */
export const SPACE_MARK = '\u2581';

/** What a segmenter may read of a model: its pieces, already checked by the model. */
export interface PieceTable {
  readonly pieces: readonly SentencePieceObject[];
  /** NORMAL pieces by string: the only pieces text is matched against. */
  readonly normalIds: ReadonlyMap<string, number>;
  /** The id of the byte piece `<0xNN>` for each byte value. */
  readonly byteIds: Int32Array;
  /**
   * True when no piece has a `▁` after its first character, so no piece crosses a word boundary and a
   * segmenter may work word by word (and cache words) with the same result as over the whole sentence.
   */
  readonly wordSafe: boolean;
}

/** Encodes one sentence of marked text (`▁` for each space and one in front, as SentencePiece sees it). */
export interface Segmenter {
  encode(marked: string, out: number[]): void;
}

export interface SegmenterDefinition {
  /** The SentencePiece `TrainerSpec.model_type` code a `.model` file gives for this kind. */
  readonly modelType: number;
  /**
   * A segmenter over the model's pieces. Throws an Error whose message is the reason when the pieces cannot
   * be a model of this kind (the caller adds the file's path).
   */
  create(table: PieceTable): Segmenter;
}

/** Segmenters by subword kind (`bpe`, `unigram`), the kinds a model card's `subword.kind` may name. */
export const segmenters = new Registry<SegmenterDefinition>('subword model kind');

/** The kind whose `.model` files say `modelType`, if frost has one. */
export function kindOfModelType(modelType: number): SubwordKind | undefined {
  return segmenters.names().find((name) => segmenters.get(name).modelType === modelType) as SubwordKind | undefined;
}

/** Calls `fn` with each word of marked text: a `▁` and what follows up to the next `▁`. */
export function forEachWord(marked: string, fn: (word: string) => void): void {
  let start = 0;
  while (start < marked.length) {
    let end = marked.indexOf(SPACE_MARK, start + 1);
    if (end < 0) end = marked.length;
    fn(marked.slice(start, end));
    start = end;
  }
}

/** Bounded memo of per-word results: cleared when full, so memory stays flat on endless distinct input. */
export class WordCache<T> {
  readonly #map = new Map<string, T>();
  constructor(private readonly limit = 200_000) {}

  get(word: string, compute: (word: string) => T): T {
    let value = this.#map.get(word);
    if (value === undefined) {
      value = compute(word);
      if (this.#map.size >= this.limit) this.#map.clear();
      this.#map.set(word, value);
    }
    return value;
  }
}

const utf8 = new TextEncoder();

/** Appends the byte pieces that spell `text` in UTF-8 (byte fallback: the piece for an unknown character). */
export function pushBytes(text: string, byteIds: Int32Array, out: number[]): void {
  for (const b of utf8.encode(text)) out.push(byteIds[b]!);
}
