/**
 * Learns a SentencePiece unigram language model (Kudo 2018, "Subword Regularization"; the procedure of
 * SentencePiece's `unigram_model_trainer.cc`) from sentences, after frost's normalisation, words split at spaces
 * and marked with a leading `▁`:
 *
 * 1. Seed: every character of the training text, and the most frequent substrings of the words (occurring at
 *    least twice, at most `maxPieceLength` characters, within one Unicode script as `spm_train` does by default
 *    (unicode-script.ts), scored by occurrences × length, the best `seedSize`), with log-probabilities from
 *    those scores.
 * 2. EM over the distinct words weighted by their counts: the E step takes each piece's expected count from
 *    forward-backward over the word's lattice; the M step drops pieces expected less than half a time (but never
 *    below the target, so a small corpus still gives the requested size) and sets log p = ψ(count) − ψ(total),
 *    SentencePiece's Bayesian ("digamma") update, a sparse prior that pulls rare pieces down further than the
 *    plain log(count/total).
 * 3. Prune, after every two EM steps, to the larger of 75% of the pieces and 110% of the target: a piece's loss is
 *    how much the corpus likelihood drops when its Viterbi occurrences are re-segmented into its best
 *    segmentation without it; pieces on no best path go first, then those with the smallest loss.
 * 4. When the pieces are within 110% of the target, keep every character and the highest-scoring rest, up to
 *    the target.
 *
 * Every character of the training text stays a piece throughout (character coverage 1.0; a character seen less
 * than half a time is scored as if seen half a time), and the 256 byte pieces cover anything else, so nothing is
 * ever `<unk>`. `vocabSize` counts the specials and the byte pieces, as for BPE. Where frost differs from
 * SentencePiece: the loss uses the number of pieces in the replacement (SentencePiece's code uses the vocabulary
 * size there), and it learns from distinct words rather than a suffix array of the text. What must
 * agree with SentencePiece, and is tested, is how `spm_encode` encodes a frost model.
 *
 * Isomorphic: no Node APIs.
 */
import { PieceType, type SentencePieceObject } from './sentencepiece-proto.ts';
import { SPACE_MARK, SubwordModel } from './subword-model.ts';
import {
  BYTE_COUNT,
  characterCounts,
  countTrainingWords,
  reservedPieces,
  SPECIAL_COUNT,
  specialAndBytePieces,
} from './training-words.ts';
import { scriptOf } from './unicode-script.ts';
import { TrainingLattice } from './unigram-lattice.ts';

export interface UnigramTrainOptions {
  /** Pieces in the model, specials and the 256 byte pieces included. @default 8000 */
  vocabSize?: number;
  /** Longest piece, in characters (`▁` included). @default 16 */
  maxPieceLength?: number;
  /** Substrings the seed vocabulary keeps besides the characters (SentencePiece's default). @default 1000000 */
  seedSize?: number;
  /** Share of pieces each pruning round keeps. @default 0.75 */
  shrinkingFactor?: number;
  /** EM steps between pruning rounds. @default 2 */
  emSteps?: number;
}

/** What training saw and did, for the model card and the benchmark. */
export interface UnigramTrainStats {
  sentences: number;
  words: number;
  distinctWords: number;
  characters: number;
  seedPieces: number;
  emSteps: number;
  pruneRounds: number;
  /** Mean negative log-likelihood per word after the last EM step. */
  loss: number;
}

/** Pieces expected less often than this are dropped in the M step. */
const MIN_EXPECTED = 0.5;

/** The digamma function ψ (the derivative of log Γ): recurrence up to 10, then its asymptotic series. */
export function digamma(x: number): number {
  let result = 0;
  for (; x < 10; x++) result -= 1 / x;
  const f = 1 / (x * x);
  const series = f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))));
  return result + Math.log(x) - 0.5 / x - series;
}

/**
 * Learns a unigram model from raw sentences (normalised here, as encoding will be).
 *
 * @example const model = trainUnigram([...german, ...english], { vocabSize: 8000 }).model; // a joint vocabulary
 */
export function trainUnigram(
  sentences: Iterable<string>,
  options: UnigramTrainOptions = {},
): { model: SubwordModel; stats: UnigramTrainStats } {
  const vocabSize = options.vocabSize ?? 8000;
  const maxPieceLength = options.maxPieceLength ?? 16;
  const seedSize = options.seedSize ?? 1_000_000;
  const shrinkingFactor = options.shrinkingFactor ?? 0.75;
  const emSteps = options.emSteps ?? 2;
  const minSize = SPECIAL_COUNT + BYTE_COUNT + 1;
  if (!Number.isInteger(vocabSize) || vocabSize < minSize) {
    throw new RangeError(`trainUnigram: vocabSize must be an integer >= ${minSize}, got ${vocabSize}`);
  }
  if (!Number.isInteger(maxPieceLength) || maxPieceLength < 2) {
    throw new RangeError(`trainUnigram: maxPieceLength must be an integer >= 2, got ${maxPieceLength}`);
  }
  if (!(shrinkingFactor > 0 && shrinkingFactor < 1)) {
    throw new RangeError(`trainUnigram: shrinkingFactor must be in (0, 1), got ${shrinkingFactor}`);
  }
  if (!Number.isInteger(emSteps) || emSteps < 1) {
    throw new RangeError(`trainUnigram: emSteps must be an integer >= 1, got ${emSteps}`);
  }
  const budget = vocabSize - SPECIAL_COUNT - BYTE_COUNT;

  const corpus = countTrainingWords(sentences);
  const allChars = characterCounts(corpus.counts);
  // Characters that do not fit the vocabulary are left to byte fallback, as in the BPE trainer.
  const chars = allChars.slice(0, budget);
  const charSet = new Set(chars.map(([ch]) => ch));
  const words = [...corpus.counts].map(([word, count]) => ({ chars: Array.from(word), count }));

  // 1. Seed pieces: the characters, then substrings by occurrences × length.
  const substrings = frequentSubstrings(words, charSet, maxPieceLength);
  const reserved = reservedPieces();
  const seeds = substrings
    .filter(([text]) => !reserved.has(text))
    .map(([text, count]): [string, number] => [text, count * Array.from(text).length])
    .sort(([a, sa], [b, sb]) => sb - sa || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, seedSize);
  const pieceText = [...chars.map(([ch]) => ch), ...seeds.map(([text]) => text)];
  const charCount = chars.length;
  const pieceIds = new Map(pieceText.map((text, id) => [text, id]));
  const logProb = new Float64Array(pieceText.length);
  {
    const weights = [...chars.map(([, c]) => c), ...seeds.map(([, s]) => s)];
    const logTotal = Math.log(weights.reduce((a, b) => a + b, 0));
    weights.forEach((weight, id) => (logProb[id] = Math.log(weight) - logTotal));
  }
  const lattice = new TrainingLattice(words, (text) => pieceIds.get(text), maxPieceLength);
  // Where each piece first occurs (word, start, end): its own string, to re-segment when pruning.
  const home = new Int32Array(pieceText.length * 3).fill(-1);
  words.forEach(({ chars: wc }, w) => {
    for (let start = 0; start < wc.length; start++) {
      let text = '';
      for (let end = start + 1; end <= Math.min(wc.length, start + maxPieceLength); end++) {
        text += wc[end - 1]!;
        const id = pieceIds.get(text);
        if (id !== undefined && home[3 * id] === -1) home.set([w, start, end], 3 * id);
      }
    }
  });
  pieceIds.clear();

  const alive = (id: number): boolean => logProb[id] !== -Infinity;
  const aliveCount = (): number => logProb.reduce((n, lp) => (lp === -Infinity ? n : n + 1), 0);
  const desired = Math.floor(budget * 1.1);
  let stepsDone = 0;
  let pruneRounds = 0;
  let loss = 0;

  // 2-3. EM steps, then prune, until the pieces are few enough.
  for (;;) {
    for (let step = 0; step < emSteps; step++) {
      loss = emStep(lattice, logProb, charCount, corpus.total, budget);
      stepsDone++;
    }
    const size = aliveCount();
    if (size <= desired) break;
    prune(lattice, logProb, home, charCount, Math.max(desired, Math.floor(shrinkingFactor * size)));
    lattice.compact(alive);
    pruneRounds++;
  }

  // 4. Every character, then the best-scoring rest up to the budget; in the file by score, best first.
  const rest = [];
  for (let id = charCount; id < pieceText.length; id++) if (alive(id)) rest.push(id);
  rest.sort((a, b) => logProb[b]! - logProb[a]! || (pieceText[a]! < pieceText[b]! ? -1 : 1));
  const kept = [...Array.from({ length: charCount }, (_, id) => id), ...rest.slice(0, budget - charCount)];
  kept.sort((a, b) => logProb[b]! - logProb[a]! || (pieceText[a]! < pieceText[b]! ? -1 : 1));
  const pieces: SentencePieceObject[] = [
    ...specialAndBytePieces(),
    ...kept.map((id) => ({ piece: pieceText[id]!, score: logProb[id]!, type: PieceType.NORMAL })),
  ];
  return {
    model: SubwordModel.fromPieces(pieces, 'unigram model', 'unigram'),
    stats: {
      sentences: corpus.sentences,
      words: corpus.total,
      distinctWords: corpus.counts.size,
      characters: allChars.length,
      seedPieces: pieceText.length,
      emSteps: stepsDone,
      pruneRounds,
      loss,
    },
  };
}

/**
 * The substrings of the words (2 to `maxPieceLength` characters of `charSet`, within one script) that occur at
 * least twice, with their counts. Level by level, like Apriori: a substring is only counted where its prefix one
 * character shorter was frequent, so memory follows the frequent substrings, not all of them.
 */
function frequentSubstrings(
  words: readonly { chars: readonly string[]; count: number }[],
  charSet: ReadonlySet<string>,
  maxPieceLength: number,
): [string, number][] {
  const found: [string, number][] = [];
  // Per word and start: the script of the substring so far, or undefined once it cannot grow (dropped).
  const open = words.map(({ chars }) =>
    chars.map((ch): string | null | undefined =>
      !charSet.has(ch) ? undefined : ch === SPACE_MARK ? null : scriptOf(ch),
    ),
  );
  for (let length = 2; length <= maxPieceLength; length++) {
    const counts = new Map<string, number>();
    words.forEach(({ chars, count }, w) => {
      const scripts = open[w]!;
      for (let start = 0; start + length <= chars.length; start++) {
        const script = scripts[start];
        if (script === undefined) continue;
        const ch = chars[start + length - 1]!;
        const next = ch === SPACE_MARK || !charSet.has(ch) ? undefined : (scriptOf(ch) ?? script);
        if (next === undefined || (script !== null && next !== script)) {
          scripts[start] = undefined;
          continue;
        }
        scripts[start] = next;
        const text = chars.slice(start, start + length).join('');
        counts.set(text, (counts.get(text) ?? 0) + count);
      }
    });
    let any = false;
    for (const [text, count] of counts) {
      if (count >= 2) {
        found.push([text, count]);
        any = true;
      }
    }
    if (!any) break;
    words.forEach(({ chars }, w) => {
      const scripts = open[w]!;
      for (let start = 0; start < chars.length; start++) {
        if (scripts[start] === undefined) continue;
        if (start + length > chars.length || (counts.get(chars.slice(start, start + length).join('')) ?? 0) < 2)
          scripts[start] = undefined;
      }
    });
  }
  return found;
}

/**
 * One EM step: expected counts, then the digamma M step, which drops pieces expected less than half a time but
 * never below `budget` pieces (so a small corpus still gives the requested size). Returns the mean negative
 * log-likelihood per word.
 */
function emStep(
  lattice: TrainingLattice,
  logProb: Float64Array,
  charCount: number,
  totalWords: number,
  budget: number,
): number {
  const expected = new Float64Array(logProb.length);
  let logLikelihood = 0;
  for (let w = 0; w < lattice.wordCount; w++)
    logLikelihood += lattice.counts[w]! * lattice.expect(w, logProb, expected);
  let alive = 0;
  const rare: number[] = [];
  for (let id = 0; id < logProb.length; id++) {
    if (logProb[id] === -Infinity) continue;
    alive++;
    if (id < charCount) expected[id] = Math.max(expected[id]!, MIN_EXPECTED);
    else if (expected[id]! < MIN_EXPECTED) rare.push(id);
  }
  rare.sort((a, b) => expected[a]! - expected[b]! || a - b);
  for (const id of rare.slice(0, Math.max(0, alive - budget))) logProb[id] = -Infinity;
  let total = 0;
  for (let id = 0; id < logProb.length; id++) {
    if (logProb[id] === -Infinity) continue;
    // A rare piece kept to fill the budget is scored as seen once in a thousand at least, never −∞.
    expected[id] = Math.max(expected[id]!, 1e-3);
    total += expected[id]!;
  }
  const psiTotal = digamma(total);
  for (let id = 0; id < logProb.length; id++) {
    if (logProb[id] !== -Infinity) logProb[id] = digamma(expected[id]!) - psiTotal;
  }
  return -logLikelihood / totalWords;
}

/**
 * Keeps the characters and the `keep` − characters pieces whose removal would cost the corpus the most
 * likelihood; marks the rest dead (log-probability −∞).
 */
function prune(
  lattice: TrainingLattice,
  logProb: Float64Array,
  home: Int32Array,
  charCount: number,
  keep: number,
): void {
  // How often each piece is on a word's Viterbi path.
  const freq = new Float64Array(logProb.length);
  for (let w = 0; w < lattice.wordCount; w++) {
    for (const id of lattice.viterbi(w, logProb)) freq[id] += lattice.counts[w]!;
  }
  let sum = 0;
  for (const f of freq) sum += f;
  const logSum = Math.log(sum);
  let totalWords = 0;
  for (const c of lattice.counts) totalWords += c;

  // Pieces on no best path, or whose own best segmentation is something else, lose nothing: they go first.
  const candidates: [number, number][] = [];
  for (let id = charCount; id < logProb.length; id++) {
    if (logProb[id] === -Infinity) continue;
    const f = freq[id]!;
    if (f === 0) {
      candidates.push([id, -Infinity]);
      continue;
    }
    const [w, start, end] = [home[3 * id]!, home[3 * id + 1]!, home[3 * id + 2]!];
    const alternative = lattice.bestWithout(w, start, end, id, logProb);
    if (alternative.score > logProb[id]!) {
      candidates.push([id, -Infinity]);
      continue;
    }
    // Replace its Viterbi occurrences with the alternative's pieces and compare the likelihoods.
    const logSumAlt = Math.log(sum + f * (alternative.pieces.length - 1));
    let logProbAlt = 0;
    for (const a of alternative.pieces) logProbAlt += Math.log(freq[a]! + f) - logSumAlt;
    candidates.push([id, (f / totalWords) * (Math.log(f) - logSum - logProbAlt)]);
  }
  candidates.sort(([a, la], [b, lb]) => (lb === la ? logProb[b]! - logProb[a]! || a - b : lb - la));
  for (let i = Math.max(0, keep - charCount); i < candidates.length; i++) logProb[candidates[i]![0]] = -Infinity;
}
