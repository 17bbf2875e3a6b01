/**
 * Learns a SentencePiece-style BPE model from sentences: frost's normalisation, words split at spaces and
 * marked with a leading `▁`, every character of the training text kept as a piece (character coverage 1.0),
 * the 256 byte pieces for anything else, then the most frequent adjacent pair merged until the vocabulary is
 * full. A merge never joins two Unicode scripts (`spm_train`'s default `split_by_unicode_script`,
 * unicode-script.ts): without that rule `▁street.` and `▁street,` become pieces of their own, a joint 8k
 * Multi30k model spends hundreds of pieces on such copies, and the word before a full stop is a different,
 * rarer piece than the same word elsewhere. A merge's piece scores minus its rank, so SentencePiece's encoder
 * (highest score first) replays the merges in the order they were learned.
 *
 * Porting note: `spm_train --model_type=bpe` counts pairs the same way but breaks ties, orders the final
 * characters and limits piece length slightly differently, so its piece list differs a little from frost's (a
 * joint 8k Multi30k model: 98% of the learned pieces in common, the same number of pieces for the training text
 * within 0.2%; test/subword-spm.test.ts). What must agree exactly, and is tested, is the encoding of a model.
 *
 * Isomorphic: no Node APIs.
 */
import { PieceType, type SentencePieceObject } from './sentencepiece-proto.ts';
import { SubwordModel } from './subword-model.ts';
import {
  BYTE_COUNT,
  characterCounts,
  countTrainingWords,
  reservedPieces,
  SPECIAL_COUNT,
  specialAndBytePieces,
} from './training-words.ts';
import { pieceScript } from './unicode-script.ts';

export interface BpeTrainOptions {
  /** Pieces in the model, specials and the 256 byte pieces included. @default 8000 */
  vocabSize?: number;
  /** Longest piece, in characters (`▁` included). @default 16 */
  maxPieceLength?: number;
  /** A pair is merged only if it occurs at least this often. @default 2 */
  minPairCount?: number;
}

/** What training saw, for the model card. */
export interface BpeTrainStats {
  sentences: number;
  words: number;
  distinctWords: number;
  characters: number;
  merges: number;
}

/** Pair keys pack two symbol ids into one number; 2^21 ids is more than any vocabulary here. */
const KEY_BASE = 2 ** 21;

/** A max-heap of [count, key] with stale entries skipped on pop (counts only ever change by re-push). */
class PairHeap {
  readonly #counts: number[] = [];
  readonly #keys: number[] = [];

  push(count: number, key: number): void {
    const c = this.#counts;
    const k = this.#keys;
    let i = c.length;
    c.push(count);
    k.push(key);
    while (i > 0) {
      const parent = Math.floor((i - 1) / 2);
      if (!this.#above(count, key, c[parent]!, k[parent]!)) break;
      c[i] = c[parent]!;
      k[i] = k[parent]!;
      i = parent;
    }
    c[i] = count;
    k[i] = key;
  }

  /** Removes and returns the top entry, or undefined when empty. */
  pop(): [number, number] | undefined {
    const c = this.#counts;
    const k = this.#keys;
    if (c.length === 0) return undefined;
    const top: [number, number] = [c[0]!, k[0]!];
    const lastCount = c.pop()!;
    const lastKey = k.pop()!;
    if (c.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= c.length) break;
        const r = l + 1;
        const child = r < c.length && this.#above(c[r]!, k[r]!, c[l]!, k[l]!) ? r : l;
        if (!this.#above(c[child]!, k[child]!, lastCount, lastKey)) break;
        c[i] = c[child]!;
        k[i] = k[child]!;
        i = child;
      }
      c[i] = lastCount;
      k[i] = lastKey;
    }
    return top;
  }

  /** Higher count first; on ties the smaller key (earlier symbols), so training is deterministic. */
  #above(countA: number, keyA: number, countB: number, keyB: number): boolean {
    return countA > countB || (countA === countB && keyA < keyB);
  }
}

/**
 * Learns a BPE model from raw sentences (normalised here, as encoding will be).
 *
 * @example const model = trainBpe([...german, ...english], { vocabSize: 8000 }).model; // a joint vocabulary
 */
export function trainBpe(
  sentences: Iterable<string>,
  options: BpeTrainOptions = {},
): { model: SubwordModel; stats: BpeTrainStats } {
  const vocabSize = options.vocabSize ?? 8000;
  const maxPieceLength = options.maxPieceLength ?? 16;
  const minPairCount = options.minPairCount ?? 2;
  if (!Number.isInteger(vocabSize) || vocabSize < SPECIAL_COUNT + BYTE_COUNT + 1) {
    throw new RangeError(
      `trainBpe: vocabSize must be an integer >= ${SPECIAL_COUNT + BYTE_COUNT + 1}, got ${vocabSize}`,
    );
  }
  if (!Number.isInteger(maxPieceLength) || maxPieceLength < 2) {
    throw new RangeError(`trainBpe: maxPieceLength must be an integer >= 2, got ${maxPieceLength}`);
  }

  const { counts: wordCounts, sentences: sentenceCount, total: wordTotal } = countTrainingWords(sentences);
  // Characters, most frequent first; those that do not fit the vocabulary are left to byte fallback.
  const chars = characterCounts(wordCounts).map(([ch]) => ch);
  const keptChars = chars.slice(0, vocabSize - SPECIAL_COUNT - BYTE_COUNT);

  // Symbols: strings by id; the characters first.
  const symbols: string[] = [...keptChars];
  const symbolIds = new Map<string, number>(keptChars.map((ch, i) => [ch, i]));
  const symbolScripts: (string | null)[] = keptChars.map(pieceScript);
  const UNKNOWN_CHAR = -1;
  const words = [...wordCounts];
  const wordSymbols: number[][] = words.map(([word]) => Array.from(word, (ch) => symbolIds.get(ch) ?? UNKNOWN_CHAR));
  const wordFreq = words.map(([, c]) => c);

  const pairCounts = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>();
  const heap = new PairHeap();
  const touched = new Set<number>();
  const addPairs = (w: number, sign: 1 | -1): void => {
    const syms = wordSymbols[w]!;
    const freq = wordFreq[w]! * sign;
    for (let i = 0; i + 1 < syms.length; i++) {
      const a = syms[i]!;
      const b = syms[i + 1]!;
      if (a === UNKNOWN_CHAR || b === UNKNOWN_CHAR) continue;
      const key = a * KEY_BASE + b;
      pairCounts.set(key, (pairCounts.get(key) ?? 0) + freq);
      touched.add(key);
      if (sign > 0) {
        let set = pairWords.get(key);
        if (set === undefined) pairWords.set(key, (set = new Set()));
        set.add(w);
      }
    }
  };
  const pushTouched = (): void => {
    for (const key of touched) {
      const count = pairCounts.get(key)!;
      if (count >= minPairCount) heap.push(count, key);
    }
    touched.clear();
  };
  for (let w = 0; w < words.length; w++) addPairs(w, 1);
  pushTouched();

  const reserved = reservedPieces();
  const merged: string[] = [];
  const mergedSet = new Set<string>();
  const pieceBudget = vocabSize - SPECIAL_COUNT - BYTE_COUNT - keptChars.length;
  const codePoints = (s: string): number => Array.from(s).length;

  while (merged.length < pieceBudget) {
    const top = heap.pop();
    if (top === undefined) break;
    const [count, key] = top;
    if (pairCounts.get(key) !== count) continue; // stale entry
    const a = Math.floor(key / KEY_BASE);
    const b = key - a * KEY_BASE;
    const piece = symbols[a]! + symbols[b]!;
    pairCounts.set(key, -Infinity); // never again: merged, or refused below
    const scriptA = symbolScripts[a]!;
    const scriptB = symbolScripts[b]!;
    const mixesScripts = scriptA !== null && scriptB !== null && scriptA !== scriptB;
    if (mixesScripts || codePoints(piece) > maxPieceLength || reserved.has(piece)) continue;

    let id = symbolIds.get(piece);
    if (id === undefined) {
      id = symbols.length;
      symbols.push(piece);
      symbolIds.set(piece, id);
      symbolScripts.push(scriptA ?? scriptB);
    }
    if (!mergedSet.has(piece)) {
      merged.push(piece);
      mergedSet.add(piece);
    }
    for (const w of pairWords.get(key) ?? []) {
      const syms = wordSymbols[w]!;
      let found = false;
      for (let i = 0; i + 1 < syms.length; i++) {
        if (syms[i] === a && syms[i + 1] === b) {
          found = true;
          break;
        }
      }
      if (!found) continue;
      addPairs(w, -1);
      const next: number[] = [];
      for (let i = 0; i < syms.length; i++) {
        if (i + 1 < syms.length && syms[i] === a && syms[i + 1] === b) {
          next.push(id);
          i++;
        } else {
          next.push(syms[i]!);
        }
      }
      wordSymbols[w] = next;
      addPairs(w, 1);
    }
    pairWords.delete(key);
    pairCounts.set(key, -Infinity);
    touched.delete(key);
    pushTouched();
  }

  const pieces: SentencePieceObject[] = [
    ...specialAndBytePieces(),
    ...merged.map((piece, rank) => ({ piece, score: -rank, type: PieceType.NORMAL })),
    ...keptChars.map((piece, rank) => ({ piece, score: -(merged.length + rank), type: PieceType.NORMAL })),
  ];
  return {
    model: SubwordModel.fromPieces(pieces),
    stats: {
      sentences: sentenceCount,
      words: wordTotal,
      distinctWords: wordCounts.size,
      characters: chars.length,
      merges: merged.length,
    },
  };
}
