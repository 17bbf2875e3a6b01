/**
 * A SentencePiece model (BPE or unigram): text to pieces and ids, and back. The piece list, its checks, byte
 * fallback (any character that is not a piece is spelled as its UTF-8 bytes, `<0xE2>` ..., so no input ever
 * maps to `<unk>`), the `.model` file and decoding are shared; how text is cut into pieces is the model type's
 * segmenter (bpe-segmenter.ts, unigram-segmenter.ts), picked from a registry by the model's kind. `npm test`
 * checks frost's pieces against `spm_encode` on the whole Multi30k validation set for both kinds
 * (test/subword-spm.test.ts, test/subword-unigram-spm.test.ts).
 *
 * Isomorphic: no Node APIs.
 */
import { SPECIALS } from '../vocab.ts';
import './bpe-segmenter.ts';
import { normalizeText } from './normalize.ts';
import { kindOfModelType, segmenters, SPACE_MARK, type PieceTable, type Segmenter } from './segmenter.ts';
import {
  decodeModelProto,
  encodeModelProto,
  PieceType,
  type ModelProtoObject,
  type SentencePieceObject,
} from './sentencepiece-proto.ts';
import type { SubwordKind } from './subword-spec.ts';
import './unigram-segmenter.ts';

export { SPACE_MARK } from './segmenter.ts';
/** What SentencePiece prints for `<unk>` when decoding (its `unk_surface` default). */
const UNK_SURFACE = ' \u2047 ';

/** A model file that cannot be used; `label` (a path) starts the message. */
export class SubwordModelError extends Error {
  constructor(label: string, reason: string, options?: ErrorOptions) {
    super(`${label}: ${reason}`, options);
    this.name = 'SubwordModelError';
  }
}

/** A `.model` file's proto, with at least one piece; anything else is refused naming `label`. */
export function readModelProto(bytes: Uint8Array, label: string): ModelProtoObject {
  let proto: ModelProtoObject;
  try {
    proto = decodeModelProto(bytes);
  } catch (err) {
    throw new SubwordModelError(label, `not a SentencePiece model (${(err as Error).message})`, { cause: err });
  }
  if (proto.pieces.length === 0) throw new SubwordModelError(label, 'not a SentencePiece model (no pieces)');
  return proto;
}

/**
 * An encoder/decoder over a SentencePiece piece list whose first four ids are frost's specials
 * (`<pad>`=0, `<unk>`=1, `<s>`=2, `</s>`=3), so the ids are a frost vocabulary's ids.
 */
export class SubwordModel {
  /** The model type: `bpe` or `unigram` (a card's `subword.kind`, the file's `model_type`). */
  readonly kind: SubwordKind;
  readonly #pieces: readonly SentencePieceObject[];
  readonly #byteOf: Int16Array;
  readonly #segmenter: Segmenter;
  // ignoreBOM: a U+FEFF in the text is a character to keep, not a byte-order mark to drop.
  readonly #decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  #pieceIds: Map<string, number> | undefined;

  private constructor(pieces: readonly SentencePieceObject[], label: string, kind: SubwordKind) {
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
    // Scores as the file stores them (float32), so a model fresh from a trainer encodes as its file will.
    this.#pieces = Object.freeze(pieces.map((p) => Object.freeze({ ...p, score: Math.fround(p.score) })));
    this.#byteOf = byteOf;
    this.kind = kind;
    const table: PieceTable = { pieces: this.#pieces, normalIds, byteIds, wordSafe };
    try {
      this.#segmenter = segmenters.get(kind).create(table);
    } catch (err) {
      throw new SubwordModelError(label, (err as Error).message, { cause: err });
    }
  }

  /** A model from its pieces (as a trainer makes them). */
  static fromPieces(
    pieces: readonly SentencePieceObject[],
    label = 'subword model',
    kind: SubwordKind = 'bpe',
  ): SubwordModel {
    return new SubwordModel(pieces, label, kind);
  }

  /**
   * Reads a SentencePiece `.model` file's bytes. Refuses, naming `label` (the file's path), bytes that are not
   * a model, a model that is neither BPE nor unigram or has no byte fallback, a normaliser other than frost's
   * (`identity`, dummy prefix, whitespace escaped), or specials at other ids than frost's.
   */
  static fromBytes(bytes: Uint8Array, label: string): SubwordModel {
    const proto = readModelProto(bytes, label);
    const { trainer_spec: trainer, normalizer_spec: normalizer } = proto;
    const kind = kindOfModelType(trainer.model_type);
    if (kind === undefined) {
      const known = segmenters.names().map((name) => `${name} ${segmenters.get(name).modelType}`);
      throw new SubwordModelError(
        label,
        `model type ${trainer.model_type} is not one frost reads (${known.join(', ')})`,
      );
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
    return new SubwordModel(proto.pieces, label, kind);
  }

  /** The `.model` file's bytes; `spm_encode --model` reads them. */
  toBytes(): Uint8Array {
    return encodeModelProto({
      pieces: this.#pieces.map((p) => ({ ...p })),
      trainer_spec: {
        model_type: segmenters.get(this.kind).modelType,
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
    const ids: number[] = [];
    this.#segmenter.encode(SPACE_MARK + text.replaceAll(' ', SPACE_MARK), ids);
    return ids;
  }

  /** Normalises and encodes `text` to piece strings (what `spm_encode --output_format=piece` prints). */
  encodeAsPieces(text: string): string[] {
    return this.encode(text).map((id) => this.#pieces[id]!.piece);
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
