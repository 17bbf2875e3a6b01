import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import {
  type BleuSegmentStats,
  bleuSegmentStats,
  bleuSignature,
  corpusBleu,
  tokenize13a,
} from '../core/metrics/bleu.ts';
import { chrfSignature, corpusChrf } from '../core/metrics/chrf.ts';
import { rareWordRate, vocabularyUsage } from '../core/metrics/word-usage.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import type { Tokenizer } from '../core/text/tokenize.ts';
import { SPECIALS, type Vocabulary } from '../core/vocab.ts';
import { loadParallelCorpus } from '../train/data/corpus.ts';
import type { TranslationRunConfig } from '../train/run-config.ts';
import { cachedJson } from './cache.ts';
import type { CheckpointInfo } from '../train/run-folder.ts';
import type { TestResult } from './schema.ts';

/** The test split of a run's corpus, with a hash that changes whenever any sentence does. */
export interface TestSet {
  split: string;
  sources: string[];
  references: string[];
  fingerprint: string;
}

/** Sentences decoded together: what bench/mt-heads.ts used, a fair batch for beam 5 on two cores. */
const DECODE_BATCH = 32;

/** BLEU as the trainer's validation computes it: detokenised output, raw references, lower-cased. */
const BLEU_OPTIONS = { lowercase: true } as const;

/** Reads the run's test split from the corpus its config names. */
export async function loadTestSet(config: TranslationRunConfig): Promise<TestSet> {
  const corpus = await loadParallelCorpus({
    dataDir: config.data.dir,
    src: config.data.src,
    tgt: config.data.tgt,
    kind: config.data.kind,
  });
  const sources = corpus.test.map((p) => p.src);
  const references = corpus.test.map((p) => p.tgt);
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([sources, references]))
    .digest('hex')
    .slice(0, 16);
  return { split: config.data.kind === 'multi30k' ? 'test2016' : 'test', sources, references, fingerprint };
}

/** The raw target sentences of the training split (a subword run's word counts come from them). */
export async function loadTrainingTargets(config: TranslationRunConfig): Promise<string[]> {
  const corpus = await loadParallelCorpus({
    dataDir: config.data.dir,
    src: config.data.src,
    tgt: config.data.tgt,
    kind: config.data.kind,
  });
  return corpus.train.map((p) => p.tgt);
}

const hypothesesSchema = z.object({ texts: z.array(z.string()), tokens: z.array(z.array(z.string())) });
export type Hypotheses = z.infer<typeof hypothesesSchema>;

/** Translates `sources` with the exported model through onnxruntime-node, {@link DECODE_BATCH} at a time. */
export async function translateSources(
  modelDir: string,
  sources: readonly string[],
  beam: number,
): Promise<Hypotheses> {
  const runtime = await loadModelDir(modelDir);
  try {
    const out: Hypotheses = { texts: [], tokens: [] };
    for (let i = 0; i < sources.length; i += DECODE_BATCH) {
      for (const t of await runtime.translate(sources.slice(i, i + DECODE_BATCH), { beam })) {
        out.texts.push(t.text);
        out.tokens.push(t.tokens);
      }
    }
    return out;
  } finally {
    await runtime.release();
  }
}

/**
 * The test-set translations of the run's checkpoint, cached in `<run>/eval/` under the checkpoint's
 * hash, the beam and the test set's fingerprint.
 */
export async function testHypotheses(
  runDir: string,
  modelDir: string,
  checkpoint: CheckpointInfo,
  set: TestSet,
  beam: number,
): Promise<Hypotheses> {
  const path = join(runDir, 'eval', `${set.split}-beam${beam}-${checkpoint.sha256.slice(0, 12)}.json`);
  const key = { checkpoint: checkpoint.sha256, beam, testSet: set.fingerprint };
  const hyps = await cachedJson(path, key, hypothesesSchema, () => translateSources(modelDir, set.sources, beam));
  if (hyps.texts.length !== set.sources.length)
    throw new Error(`${path}: ${hyps.texts.length} translations for ${set.sources.length} test sentences`);
  return hyps;
}

/**
 * What a run's BLEU comparisons resample (report/bleu-interval.ts): the lower-cased test BLEU statistics of its
 * translations, sentence by sentence, and the test set they were scored on.
 */
export interface TestSegments {
  /** The test set's fingerprint: two runs' sentences pair up only on the same one. */
  testSet: string;
  stats: BleuSegmentStats;
}

/** The per-sentence statistics behind `scoreTest`'s lower-cased BLEU. */
export function testSegments(hyps: Hypotheses, set: TestSet): TestSegments {
  return { testSet: set.fingerprint, stats: bleuSegmentStats(hyps.texts, [set.references], BLEU_OPTIONS) };
}

const SPECIAL_TOKENS: ReadonlySet<string> = new Set(Object.values(SPECIALS).map((s) => s.token));
const words = (tokens: readonly string[]) => tokens.filter((t) => !SPECIAL_TOKENS.has(t));
/** Words of detokenised text as BLEU sees them (13a): what a subword run's word-level figures count. */
const textWords = (text: string) =>
  tokenize13a(text)
    .split(' ')
    .filter((w) => w !== '');

/** Training counts of the words of `sentences` (13a words): a subword run's word frequencies. */
export function wordCounts(sentences: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const s of sentences) for (const w of textWords(s)) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

/**
 * BLEU (cased, the headline, and lower-cased), chrF, chrF++ (lower-cased), vocabulary usage and rare-word rate
 * of the translations, with the references' usage and rate beside them for scale. Word runs count their
 * vocabulary's tokens, with the training frequencies the vocabulary kept (a word outside it occurred fewer than
 * the minimum count, so it counts 0). Subword runs (`trainWords` given) count words of the detokenised text
 * against word counts of the training targets, and report the same figures for pieces under `pieces`.
 */
export function scoreTest(
  hyps: Hypotheses,
  set: TestSet,
  opts: {
    tgtVocab: Vocabulary;
    tokenizer: Tokenizer;
    tgtLang: string;
    beam: number;
    rareThreshold: number;
    /** Subword runs: word counts of the training targets (see {@link wordCounts}). */
    trainWords?: ReadonlyMap<string, number>;
  },
): TestResult {
  const { tgtVocab, trainWords } = opts;
  if (!tgtVocab.frequencies)
    throw new Error(
      'the target vocabulary has no training frequencies (vocab.tgt.json predates them); retrain or rebuild it',
    );
  const tokenCount = (w: string) => tgtVocab.count(w) ?? 0;
  const producedTokens = hyps.tokens.map(words);
  const referenceTokens = set.references.map((r) => words(opts.tokenizer.tokenize(r, opts.tgtLang)));
  const usage = (produced: string[][], references: string[][], frequencyOf: (w: string) => number) => {
    const rate = rareWordRate(produced, frequencyOf, opts.rareThreshold);
    const refRate = rareWordRate(references, frequencyOf, opts.rareThreshold);
    return {
      vocabUsage: vocabularyUsage(produced),
      refVocabUsage: vocabularyUsage(references),
      rareRate: Number.isNaN(rate.rate) ? null : rate.rate,
      refRareRate: Number.isNaN(refRate.rate) ? null : refRate.rate,
      words: rate.words,
    };
  };
  const byWord = trainWords
    ? usage(hyps.texts.map(textWords), set.references.map(textWords), (w) => trainWords.get(w) ?? 0)
    : usage(producedTokens, referenceTokens, tokenCount);
  const refs = [set.references];
  return {
    split: set.split,
    sentences: set.sources.length,
    beam: opts.beam,
    bleu: corpusBleu(hyps.texts, refs, BLEU_OPTIONS).score,
    bleuSignature: bleuSignature(1, BLEU_OPTIONS),
    bleuCased: corpusBleu(hyps.texts, refs).score,
    bleuCasedSignature: bleuSignature(1, {}),
    chrf: corpusChrf(hyps.texts, refs, BLEU_OPTIONS).score,
    chrfpp: corpusChrf(hyps.texts, refs, { ...BLEU_OPTIONS, wordOrder: 2 }).score,
    chrfSignature: chrfSignature(1, { ...BLEU_OPTIONS, wordOrder: 2 }),
    ...byWord,
    ...(trainWords ? { pieces: usage(producedTokens, referenceTokens, tokenCount) } : {}),
  };
}
