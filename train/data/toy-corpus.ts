import { SeededRandom } from '../../core/random.ts';
import type { Pair, ParallelCorpus } from './corpus.ts';

/**
 * A synthetic parallel corpus for checking that a model can learn translation at all, in minutes
 * and without downloads. The two "languages" have real structure, so a model has to learn more
 * than a word list:
 *
 * - source (English-like, SVO): `det adj* noun verb [det adj* noun] [prep det adj* noun]`, with
 *   plural nouns in `-s`, the determiners `the` / `a` / `some`, and `-s` on verbs after a singular subject;
 * - target (SOV, postpositions): `det noun adj* [det noun adj* postp] [det noun adj*] verb`, where
 *   adjectives follow their noun, the noun's gender (a lexicon property, invisible in the source)
 *   and number choose the determiner and the adjective endings, plurals take `-en`, and the verb
 *   agrees with the subject's number.
 *
 * The translation is a deterministic function of the source and maps word to word (same length),
 * so a small attention model can reach BLEU above 90. Text is lower-case ASCII separated by single
 * spaces, which `tokenize()` leaves unchanged.
 */

/** Shortest and longest sentence, in words (both sides have the same length). */
export const TOY_MIN_WORDS = 3;
export const TOY_MAX_WORDS = 12;

/** Lexicon sizes: a few hundred lemmas, so the vocabularies have a few hundred types. */
const TOY_LEXICON_SIZES = { nouns: 160, adjectives: 80, transitiveVerbs: 60, intransitiveVerbs: 25 } as const;

// Real English function words make the source read like English; content words are invented.
const SRC_PREPOSITIONS = ['on', 'in', 'with', 'near', 'under', 'behind', 'beside', 'above', 'below', 'without'];
const SRC_DET = { def: 'the', indefSg: 'a', indefPl: 'some' } as const;

// Two syllable inventories give the languages a different look.
const SRC_ONSETS = [
  'b',
  'd',
  'f',
  'g',
  'h',
  'k',
  'l',
  'm',
  'n',
  'p',
  'r',
  's',
  't',
  'v',
  'w',
  'br',
  'cl',
  'dr',
  'gr',
  'pl',
  'st',
  'tr',
  'sh',
  'ch',
];
const SRC_VOWELS = ['a', 'e', 'i', 'o', 'u', 'ee', 'oo', 'ai'];
const TGT_ONSETS = ['k', 'z', 'v', 'r', 'l', 'm', 'n', 't', 'd', 'j', 'x', 'q', 'y', 'kr', 'zv', 'tl', 'ts'];
const TGT_VOWELS = ['a', 'e', 'i', 'o', 'u', 'ay', 'ei', 'ou'];
const TGT_CODAS = ['k', 'r', 'l', 'm', 'n', 't', 'z', 'sh'];

type Gender = ToyNoun['gender'];
type NumberKind = 'sg' | 'pl';

// Target determiners by definiteness, gender and number: the agreement a model has to learn.
const TGT_DET: Record<'def' | 'indef', Record<Gender, Record<NumberKind, string>>> = {
  def: { 0: { sg: 'lo', pl: 'li' }, 1: { sg: 'la', pl: 'le' } },
  indef: { 0: { sg: 'un', pl: 'unos' }, 1: { sg: 'una', pl: 'unas' } },
};
const TGT_ADJ_SUFFIX: Record<Gender, Record<NumberKind, string>> = {
  0: { sg: 'o', pl: 'os' },
  1: { sg: 'a', pl: 'as' },
};
const TGT_NOUN_PLURAL = 'en';
const TGT_VERB_SUFFIX: Record<NumberKind, string> = { sg: 'et', pl: 'ant' };

/** A lexicon entry: source stem and target stem. */
export interface ToyLemma {
  src: string;
  tgt: string;
}
/** A noun also carries its target gender, which the source does not show. */
export interface ToyNoun extends ToyLemma {
  gender: 0 | 1;
}

/** One generated sentence with its word alignment: `align[j]` is the source position of target word j. */
export interface ToySentence {
  src: string[];
  tgt: string[];
  align: number[];
}

/** A word of a sentence under construction: its two surface forms and where it sits in the source. */
interface Word {
  src: string;
  tgt: string;
  pos: number;
}

/**
 * The lexicon and grammar of one toy language pair. Built from the seed alone, so every split drawn
 * from a seed shares one language.
 */
export class ToyLanguage {
  readonly nouns: readonly ToyNoun[];
  readonly adjectives: readonly ToyLemma[];
  readonly transitiveVerbs: readonly ToyLemma[];
  readonly intransitiveVerbs: readonly ToyLemma[];
  readonly prepositions: readonly ToyLemma[];

  /** @param lexiconScale multiplies every lexicon size (at least 2 lemmas per class stay). */
  constructor(seed: number, lexiconScale = 1) {
    const rng = new SeededRandom(seed, 'toy-corpus/lexicon');
    // Every surface form of every lemma is unique across the whole language, so a word never has two
    // parts of speech and the translation stays a function of the source.
    const taken = new Set<string>([
      ...Object.values(SRC_DET),
      ...SRC_PREPOSITIONS,
      ...Object.values(TGT_DET).flatMap((g) => Object.values(g).flatMap((n) => Object.values(n))),
    ]);
    const draw = (forms: (src: string, tgt: string) => string[], tgtCoda: boolean): ToyLemma => {
      for (;;) {
        // Source stems end in a vowel, so stem + 's' can never equal another stem.
        const src = syllable(rng, SRC_ONSETS, SRC_VOWELS) + syllable(rng, SRC_ONSETS, SRC_VOWELS);
        const tgt =
          syllable(rng, TGT_ONSETS, TGT_VOWELS) +
          syllable(rng, TGT_ONSETS, TGT_VOWELS) +
          (tgtCoda ? pick(rng, TGT_CODAS) : '');
        const all = forms(src, tgt);
        if (new Set(all).size === all.length && all.every((f) => !taken.has(f))) {
          for (const f of all) taken.add(f);
          return { src, tgt };
        }
      }
    };
    const sizes = scaledLexicon(lexiconScale);
    this.nouns = times(sizes.nouns, () => ({
      ...draw((s, t) => [s, s + 's', t, t + TGT_NOUN_PLURAL], true),
      gender: rng.int(2) as Gender,
    }));
    const adjForms = (s: string, t: string) => [
      s,
      ...Object.values(TGT_ADJ_SUFFIX).flatMap((g) => [t + g.sg, t + g.pl]),
    ];
    this.adjectives = times(sizes.adjectives, () => draw(adjForms, true));
    const verbForms = (s: string, t: string) => [s, s + 's', t + TGT_VERB_SUFFIX.sg, t + TGT_VERB_SUFFIX.pl];
    this.transitiveVerbs = times(sizes.transitiveVerbs, () => draw(verbForms, true));
    this.intransitiveVerbs = times(sizes.intransitiveVerbs, () => draw(verbForms, true));
    this.prepositions = SRC_PREPOSITIONS.map((src) => ({ src, tgt: draw((_s, t) => [t], false).tgt }));
  }

  /** Draws one sentence pair; resamples until it has TOY_MIN_WORDS..TOY_MAX_WORDS words. */
  sample(rng: SeededRandom): ToySentence {
    for (;;) {
      const s = this.sampleOnce(rng);
      if (s.src.length >= TOY_MIN_WORDS && s.src.length <= TOY_MAX_WORDS) return s;
    }
  }

  private sampleOnce(rng: SeededRandom): ToySentence {
    let pos = 0;
    const nounPhrase = (): { words: Word[]; number: NumberKind } => {
      const noun = pick(rng, this.nouns);
      const number: NumberKind = rng.next() < 0.5 ? 'sg' : 'pl';
      const def = rng.next() < 0.6 ? 'def' : 'indef';
      const nAdj = weighted(rng, [0.5, 0.35, 0.15]);
      const adjs: ToyLemma[] = [];
      while (adjs.length < nAdj) {
        const a = pick(rng, this.adjectives);
        if (!adjs.includes(a)) adjs.push(a); // "the big big dog" would be legal but unhelpful
      }
      const srcDet = def === 'def' ? SRC_DET.def : number === 'sg' ? SRC_DET.indefSg : SRC_DET.indefPl;
      const det: Word = { src: srcDet, tgt: TGT_DET[def][noun.gender][number], pos: pos++ };
      const adjWords = adjs.map((a) => ({ src: a.src, tgt: a.tgt + TGT_ADJ_SUFFIX[noun.gender][number], pos: pos++ }));
      const nounWord: Word = {
        src: number === 'sg' ? noun.src : noun.src + 's',
        tgt: number === 'sg' ? noun.tgt : noun.tgt + TGT_NOUN_PLURAL,
        pos: pos++,
      };
      // Target order: determiner, noun, then the adjectives in source order.
      return { words: [det, nounWord, ...adjWords], number };
    };

    const subject = nounPhrase();
    const transitive = rng.next() < 0.75;
    const lemma = pick(rng, transitive ? this.transitiveVerbs : this.intransitiveVerbs);
    const verb: Word = {
      src: subject.number === 'sg' ? lemma.src + 's' : lemma.src,
      tgt: lemma.tgt + TGT_VERB_SUFFIX[subject.number],
      pos: pos++,
    };
    const object = transitive ? nounPhrase().words : [];
    let pp: Word[] = [];
    if (rng.next() < 0.4) {
      const prep = pick(rng, this.prepositions);
      const prepWord: Word = { src: prep.src, tgt: prep.tgt, pos: pos++ };
      pp = [...nounPhrase().words, prepWord]; // a postposition: after its noun phrase
    }
    // Target order: subject, prepositional phrase, object, verb (SOV).
    const tgtWords = [...subject.words, ...pp, ...object, verb];
    const src: string[] = new Array<string>(tgtWords.length);
    for (const w of tgtWords) src[w.pos] = w.src;
    return { src, tgt: tgtWords.map((w) => w.tgt), align: tgtWords.map((w) => w.pos) };
  }
}

function syllable(rng: SeededRandom, onsets: readonly string[], vowels: readonly string[]): string {
  return pick(rng, onsets) + pick(rng, vowels);
}

function pick<T>(rng: SeededRandom, items: readonly T[]): T {
  return items[rng.int(items.length)];
}

/** Index drawn with the given probabilities (which sum to 1). */
function weighted(rng: SeededRandom, probs: readonly number[]): number {
  let u = rng.next();
  for (let i = 0; i < probs.length - 1; i++) {
    if (u < probs[i]) return i;
    u -= probs[i];
  }
  return probs.length - 1;
}

function times<T>(n: number, make: () => T): T[] {
  return Array.from({ length: n }, make);
}

export interface ToyCorpusOptions {
  /** Integer in [0, 2^32): the whole corpus, lexicon included, follows from it. */
  seed: number;
  /** Sentence pairs per split. */
  train: number;
  val: number;
  test: number;
  /**
   * Multiplies the lexicon sizes: 0.25 gives a vocabulary of about 150-200 words that a tiny model
   * learns in a minute (what the tests use). @default 1
   */
  lexiconScale?: number;
}

/** Lexicon sizes for a scale factor. */
function scaledLexicon(scale: number): Record<keyof typeof TOY_LEXICON_SIZES, number> {
  if (!(scale > 0)) throw new RangeError(`toy corpus: 'lexiconScale' must be positive, got ${scale}`);
  const s = TOY_LEXICON_SIZES;
  const f = (n: number) => Math.max(2, Math.round(n * scale));
  return {
    nouns: f(s.nouns),
    adjectives: f(s.adjectives),
    transitiveVerbs: f(s.transitiveVerbs),
    intransitiveVerbs: f(s.intransitiveVerbs),
  };
}

/**
 * Generates the toy corpus. Deterministic for a given seed and sizes. Val and test hold no sentence
 * whose source is also in train (or in each other), so they measure generalisation, not recall; each
 * split draws from its own stream, so changing the train size leaves val and test unchanged.
 */
export function makeToyCorpus(options: ToyCorpusOptions): ParallelCorpus {
  const { seed } = options;
  for (const split of ['train', 'val', 'test'] as const) {
    const n = options[split];
    if (!Number.isInteger(n) || n < 0)
      throw new RangeError(`toy corpus: '${split}' must be a non-negative integer, got ${n}`);
  }
  const lang = new ToyLanguage(seed, options.lexiconScale ?? 1);
  const heldOut = new Set<string>();
  const draw = (split: 'train' | 'val' | 'test', unique: boolean): Pair[] => {
    const rng = new SeededRandom(seed, `toy-corpus/${split}`);
    const pairs: Pair[] = [];
    while (pairs.length < options[split]) {
      const s = lang.sample(rng);
      const src = s.src.join(' ');
      if (heldOut.has(src)) continue;
      if (unique) heldOut.add(src);
      pairs.push({ src, tgt: s.tgt.join(' ') });
    }
    return pairs;
  };
  // Held-out splits first, so train can avoid them.
  const test = draw('test', true);
  const val = draw('val', true);
  const train = draw('train', false);
  return { train, val, test };
}

/** A short description of the toy corpus, for the README that `frost data toy` writes. */
export function describeToyCorpus(options: ToyCorpusOptions): string {
  const s = scaledLexicon(options.lexiconScale ?? 1);
  return [
    '# frost toy corpus',
    '',
    `Synthetic parallel corpus generated by \`frost data toy\` (train/data/toy-corpus.ts) with seed ${options.seed}.`,
    'It is not natural language: it exists to check quickly that a translation model learns at all.',
    '',
    '| file | pairs |',
    '|---|---:|',
    `| train.src / train.tgt | ${options.train} |`,
    `| val.src / val.tgt | ${options.val} |`,
    `| test.src / test.tgt | ${options.test} |`,
    '',
    'One sentence per line, lower-case, words separated by single spaces; line i of `.src` translates to line i of `.tgt`.',
    `Sentences have ${TOY_MIN_WORDS}-${TOY_MAX_WORDS} words; source and target have the same length.`,
    'Val and test sources never occur in train.',
    '',
    '- source (SVO, English-like): `det adj* noun verb [det adj* noun] [prep det adj* noun]`; plural nouns end in -s,',
    '  determiners are the / a / some, and the verb takes -s after a singular subject.',
    '- target (SOV): `det noun adj* [det noun adj* postposition] [det noun adj*] verb`; adjectives follow the noun;',
    '  each noun has a gender that, with number and definiteness, picks the determiner and the adjective ending;',
    '  plural nouns end in -en; the verb agrees with the subject in number.',
    `- lexicon: ${s.nouns} nouns, ${s.adjectives} adjectives, ${s.transitiveVerbs} transitive and ${s.intransitiveVerbs}`,
    `  intransitive verbs, ${SRC_PREPOSITIONS.length} prepositions, built from syllables from the seed.`,
    '',
  ].join('\n');
}
