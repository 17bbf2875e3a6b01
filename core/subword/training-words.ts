/**
 * What every frost subword trainer starts from and ends with: the training text as normalised, `▁`-marked words
 * with their counts and characters (most frequent first), and the pieces every model begins with (frost's
 * four specials, then the 256 byte pieces that make byte fallback possible).
 *
 * Isomorphic: no Node APIs.
 */
import { SPECIALS } from '../vocab.ts';
import { normalizeText } from './normalize.ts';
import { SPACE_MARK } from './segmenter.ts';
import { PieceType, type SentencePieceObject } from './sentencepiece-proto.ts';

export const SPECIAL_COUNT = 4;
export const BYTE_COUNT = 256;

/** A trainer's corpus: distinct words, each `▁` + the word, with how often it occurs. */
export interface TrainingWords {
  counts: Map<string, number>;
  sentences: number;
  /** Running words (the sum of the counts). */
  total: number;
}

/** Normalises each sentence (as encoding will) and counts its `▁`-marked words. */
export function countTrainingWords(sentences: Iterable<string>): TrainingWords {
  const counts = new Map<string, number>();
  let sentenceCount = 0;
  let total = 0;
  for (const sentence of sentences) {
    sentenceCount++;
    const text = normalizeText(sentence);
    if (text === '') continue;
    for (const w of text.split(' ')) {
      const word = SPACE_MARK + w;
      counts.set(word, (counts.get(word) ?? 0) + 1);
      total++;
    }
  }
  return { counts, sentences: sentenceCount, total };
}

/** The characters of the words with their counts, most frequent first (ties by code unit order). */
export function characterCounts(words: ReadonlyMap<string, number>): [string, number][] {
  const counts = new Map<string, number>();
  for (const [word, count] of words) {
    for (const ch of word) counts.set(ch, (counts.get(ch) ?? 0) + count);
  }
  return [...counts].sort(([a, ca], [b, cb]) => cb - ca || (a < b ? -1 : a > b ? 1 : 0));
}

/** `<0x41>` for byte 0x41: SentencePiece's name of a byte piece. */
export function bytePiece(byte: number): string {
  return `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`;
}

/** The pieces at ids 0..259: `<pad>`, `<unk>`, `<s>`, `</s>`, then `<0x00>`..`<0xFF>`. */
export function specialAndBytePieces(): SentencePieceObject[] {
  return [
    { piece: SPECIALS.pad.token, score: 0, type: PieceType.CONTROL },
    { piece: SPECIALS.unk.token, score: 0, type: PieceType.UNKNOWN },
    { piece: SPECIALS.bos.token, score: 0, type: PieceType.CONTROL },
    { piece: SPECIALS.eos.token, score: 0, type: PieceType.CONTROL },
    ...Array.from({ length: BYTE_COUNT }, (_, b) => ({ piece: bytePiece(b), score: 0, type: PieceType.BYTE })),
  ];
}

/** Strings a learned piece must not be: they name the specials and byte pieces. */
export function reservedPieces(): Set<string> {
  return new Set(specialAndBytePieces().map((p) => p.piece));
}
