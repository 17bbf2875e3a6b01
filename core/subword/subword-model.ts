/**
 * A SentencePiece BPE model: text to pieces and ids, and back. Encoding follows SentencePiece's BPE
 * (google/sentencepiece `src/bpe_model.cc`): start from characters, repeatedly merge the adjacent pair whose
 * concatenation is a piece with the highest score (the leftmost on ties), and spell any character that is not
 * a piece as its UTF-8 bytes (`<0xE2>` ...), so no input ever maps to `<unk>`. `npm test` checks frost's pieces
 * against `spm_encode` on the whole Multi30k validation set (test/subword-spm.test.ts).
 *
 * Porting note: SentencePiece merges over the whole sentence; frost merges word by word (a word is a `▁` and
 * what follows up to the next `▁`) and caches each word's ids. That is the same result whenever no piece has a
 * `▁` after its first character, which frost's trainer guarantees; models without that property (from
 * `spm_train --split_by_whitespace=false`) are encoded sentence-wide, uncached.
 *
 * Isomorphic: no Node APIs.
 */
import { SPECIALS } from '../vocab.ts';
import { normalizeText } from './normalize.ts';
import {
  decodeModelProto,
  encodeModelProto,
  ModelType,
  PieceType,
  type ModelProtoObject,
  type SentencePieceObject,
} from './sentencepiece-proto.ts';

/** The word-boundary mark SentencePiece writes for a space (U+2581). */
export const SPACE_MARK = '\u2581';
/** What SentencePiece prints for `<unk>` when decoding (its `unk_surface` default). */
const UNK_SURFACE = ' \u2047 ';
const WORD_CACHE_LIMIT = 200_000;

/** A model file that cannot be used; `label` (a path) starts the message. */
export class SubwordModelError extends Error {
  constructor(label: string, reason: string, options?: ErrorOptions) {
    super(`${label}: ${reason}`, options);
    this.name = 'SubwordModelError';
  }
}

/**
 * An encoder/decoder over a SentencePiece BPE piece list whose first four ids are frost's specials
 * (`<pad>`=0, `<unk>`=1, `<s>`=2, `</s>`=3), so the ids are a frost vocabulary's ids.
 */
export class SubwordModel {
  readonly #pieces: readonly SentencePieceObject[];
  readonly #normalIds: ReadonlyMap<string, number>;
  readonly #byteIds: Int32Array;
  readonly #byteOf: Int16Array;
  readonly #wordSafe: boolean;
  readonly #cache = new Map<string, readonly number[]>();
  readonly #encoder = new TextEncoder();
  // ignoreBOM: a U+FEFF in the text is a character to keep, not a byte-order mark to drop.
  readonly #decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  #pieceIds: Map<string, number> | undefined;

  private constructor(pieces: readonly SentencePieceObject[], label: string) {
    const specials = [SPECIALS.pad, SPECIALS.unk, SPECIALS.bos, SPECIALS.eos];
    for (const { token, id } of specials) {
      const expected = id === SPECIALS.unk.id ? PieceType.UNKNOWN : PieceType.CONTROL;
      if (pieces[id]?.piece !== token || pieces[id]?.type !== expected) {
        throw new SubwordModelError(
          label,
          `id ${id} must be the special '${token}', found '${pieces[id]?.piece ?? '(none)'}'`,
        );
      }
    }
    const normalIds = new Map<string, number>();
    const byteIds = new Int32Array(256).fill(-1);
    const byteOf = new Int16Array(pieces.length).fill(-1);
    const seen = new Set<string>();
    let wordSafe = true;
    pieces.forEach(({ piece, type }, id) => {
      if (piece === '') throw new SubwordModelError(label, `piece ${id} is empty`);
      if (seen.has(piece)) throw new SubwordModelError(label, `piece '${piece}' appears twice`);
      seen.add(piece);
      if (type === PieceType.NORMAL) {
        normalIds.set(piece, id);
        if (piece.indexOf(SPACE_MARK, 1) >= 0) wordSafe = false;
      } else if (type === PieceType.BYTE) {
        const match = /^<0x([0-9A-F]{2})>$/.exec(piece);
        if (!match) throw new SubwordModelError(label, `byte piece ${id} is '${piece}', not <0xXX>`);
        const b = Number.parseInt(match[1]!, 16);
        byteIds[b] = id;
        byteOf[id] = b;
      } else if (id >= specials.length && type !== PieceType.CONTROL) {
        throw new SubwordModelError(label, `piece ${id} '${piece}' has type ${type}, which frost does not support`);
      }
    });
    if (byteIds.some((id) => id < 0))
      throw new SubwordModelError(label, 'no byte fallback: the 256 <0xXX> pieces are missing');
    this.#pieces = Object.freeze(pieces.map((p) => Object.freeze({ ...p })));
    this.#normalIds = normalIds;
    this.#byteIds = byteIds;
    this.#byteOf = byteOf;
    this.#wordSafe = wordSafe;
  }

  /** A model from its pieces (as the trainer makes them). */
  static fromPieces(pieces: readonly SentencePieceObject[], label = 'subword model'): SubwordModel {
    return new SubwordModel(pieces, label);
  }

  /**
   * Reads a SentencePiece `.model` file's bytes. Refuses, naming `label` (the file's path), bytes that are not
   * a model, a model that is not BPE with byte fallback, a normaliser other than frost's (`identity`, dummy
   * prefix, whitespace escaped), or specials at other ids than frost's.
   */
  static fromBytes(bytes: Uint8Array, label: string): SubwordModel {
    let proto: ModelProtoObject;
    try {
      proto = decodeModelProto(bytes);
    } catch (err) {
      throw new SubwordModelError(label, `not a SentencePiece model (${(err as Error).message})`, { cause: err });
    }
    if (proto.pieces.length === 0) throw new SubwordModelError(label, 'not a SentencePiece model (no pieces)');
    const { trainer_spec: trainer, normalizer_spec: normalizer } = proto;
    if (trainer.model_type !== ModelType.BPE) {
      throw new SubwordModelError(label, `model type ${trainer.model_type} is not BPE (${ModelType.BPE})`);
    }
    if (!trainer.byte_fallback) throw new SubwordModelError(label, 'the model has no byte fallback');
    const normalizerOk =
      normalizer.name === 'identity' &&
      normalizer.precompiled_charsmap.length === 0 &&
      normalizer.add_dummy_prefix &&
      normalizer.remove_extra_whitespaces &&
      normalizer.escape_whitespaces;
    if (!normalizerOk) {
      throw new SubwordModelError(
        label,
        `normaliser '${normalizer.name}' is not frost's (identity, dummy prefix, escaped spaces)`,
      );
    }
    return new SubwordModel(proto.pieces, label);
  }

  /** The `.model` file's bytes; `spm_encode --model` reads them. */
  toBytes(): Uint8Array {
    return encodeModelProto({
      pieces: this.#pieces.map((p) => ({ ...p })),
      trainer_spec: {
        model_type: ModelType.BPE,
        vocab_size: this.#pieces.length,
        character_coverage: 1,
        max_sentencepiece_length: 16,
        byte_fallback: true,
        unk_id: SPECIALS.unk.id,
        bos_id: SPECIALS.bos.id,
        eos_id: SPECIALS.eos.id,
        pad_id: SPECIALS.pad.id,
        unk_piece: SPECIALS.unk.token,
        bos_piece: SPECIALS.bos.token,
        eos_piece: SPECIALS.eos.token,
        pad_piece: SPECIALS.pad.token,
      },
      normalizer_spec: {
        name: 'identity',
        precompiled_charsmap: new Uint8Array(0),
        add_dummy_prefix: true,
        remove_extra_whitespaces: true,
        escape_whitespaces: true,
      },
    });
  }

  /** Number of pieces (the vocabulary size, specials and byte pieces included). */
  get size(): number {
    return this.#pieces.length;
  }

  /** Piece strings by id: a frost vocabulary's tokens. */
  get tokens(): string[] {
    return this.#pieces.map((p) => p.piece);
  }

  /** The pieces with their scores and types, as stored in the model file. */
  get pieces(): readonly SentencePieceObject[] {
    return this.#pieces;
  }

  /** Ids that stand for no text and must never be generated: `<pad>`, `<unk>`, `<s>`. */
  get nonTextIds(): number[] {
    return [SPECIALS.pad.id, SPECIALS.unk.id, SPECIALS.bos.id];
  }

  /** True when `id` is a byte piece (`<0x41>`), i.e. part of a character spelled out in UTF-8. */
  isByte(id: number): boolean {
    return (this.#byteOf[id] ?? -1) >= 0;
  }

  /** Normalises `text` (see normalize.ts) and encodes it to ids. Never returns `<unk>`'s id. */
  encode(text: string): number[] {
    return this.encodeNormalized(normalizeText(text));
  }

  /** Encodes already-normalised text (as {@link normalizeText} returns it) to ids. */
  encodeNormalized(text: string): number[] {
    if (text === '') return [];
    const marked = SPACE_MARK + text.replaceAll(' ', SPACE_MARK);
    if (!this.#wordSafe) return this.#encodeSpan(marked);
    const ids: number[] = [];
    let start = 0;
    while (start < marked.length) {
      let end = marked.indexOf(SPACE_MARK, start + 1);
      if (end < 0) end = marked.length;
      const word = marked.slice(start, end);
      let wordIds = this.#cache.get(word);
      if (wordIds === undefined) {
        wordIds = this.#encodeSpan(word);
        if (this.#cache.size >= WORD_CACHE_LIMIT) this.#cache.clear();
        this.#cache.set(word, wordIds);
      }
      for (const id of wordIds) ids.push(id);
      start = end;
    }
    return ids;
  }

  /** Normalises and encodes `text` to piece strings (what `spm_encode --output_format=piece` prints). */
  encodeAsPieces(text: string): string[] {
    return this.encode(text).map((id) => this.#pieces[id]!.piece);
  }

  /** SentencePiece BPE on one span of marked text. */
  #encodeSpan(span: string): number[] {
    const symbols = Array.from(span);
    const ids = this.#normalIds;
    const score = (piece: string): number | undefined => {
      const id = ids.get(piece);
      return id === undefined ? undefined : this.#pieces[id]!.score;
    };
    for (;;) {
      let best = -1;
      let bestScore = -Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const s = score(symbols[i]! + symbols[i + 1]!);
        if (s !== undefined && s > bestScore) {
          best = i;
          bestScore = s;
        }
      }
      if (best < 0) break;
      symbols.splice(best, 2, symbols[best]! + symbols[best + 1]!);
    }
    const out: number[] = [];
    for (const symbol of symbols) {
      const id = ids.get(symbol);
      if (id !== undefined) {
        out.push(id);
      } else {
        for (const b of this.#encoder.encode(symbol)) out.push(this.#byteIds[b]!);
      }
    }
    return out;
  }

  /**
   * Ids back to text, as SentencePiece decodes: `▁` becomes a space, byte pieces are joined and read as UTF-8
   * (malformed sequences become U+FFFD), `<pad>`/`<s>`/`</s>` vanish, and the leading space goes.
   */
  decode(ids: Iterable<number>): string {
    let text = '';
    let bytes: number[] = [];
    const flushBytes = (): void => {
      if (bytes.length === 0) return;
      text += this.#decoder.decode(Uint8Array.from(bytes));
      bytes = [];
    };
    for (const id of ids) {
      const piece = this.#pieces[id];
      if (piece === undefined) throw new RangeError(`subword model: id ${id} is outside 0..${this.size - 1}`);
      const b = this.#byteOf[id]!;
      if (b >= 0) {
        bytes.push(b);
        continue;
      }
      flushBytes();
      if (piece.type === PieceType.NORMAL) text += piece.piece;
      else if (piece.type === PieceType.UNKNOWN) text += UNK_SURFACE;
    }
    flushBytes();
    const spaced = text.replaceAll(SPACE_MARK, ' ');
    return spaced.startsWith(' ') ? spaced.slice(1) : spaced;
  }

  /** Piece strings back to text (see {@link SubwordModel.decode}); unknown strings are an error. */
  decodePieces(pieces: readonly string[]): string {
    this.#pieceIds ??= new Map(this.#pieces.map((p, id) => [p.piece, id]));
    const index = this.#pieceIds;
    return this.decode(
      pieces.map((p) => {
        const id = index.get(p);
        if (id === undefined) throw new RangeError(`subword model: '${p}' is not a piece of this model`);
        return id;
      }),
    );
  }
}
