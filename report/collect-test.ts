import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import { bleuSignature, corpusBleu } from '../core/metrics/bleu.ts';
import { chrfSignature, corpusChrf } from '../core/metrics/chrf.ts';
import { rareWordRate, vocabularyUsage } from '../core/metrics/word-usage.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { getTokenizer } from '../core/text/tokenize.ts';
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
  const corpus = await loadParallelCorpus({ dataDir: config.data.dir, src: config.data.src, tgt: config.data.tgt, kind: config.data.kind });
  const sources = corpus.test.map((p) => p.src);
  const references = corpus.test.map((p) => p.tgt);
  const fingerprint = createHash('sha256').update(JSON.stringify([sources, references])).digest('hex').slice(0, 16);
  return { split: config.data.kind === 'multi30k' ? 'test2016' : 'test', sources, references, fingerprint };
}

const hypothesesSchema = z.object({ texts: z.array(z.string()), tokens: z.array(z.array(z.string())) });
export type Hypotheses = z.infer<typeof hypothesesSchema>;

/** Translates the test set with the exported model through onnxruntime-node. */
async function decode(modelDir: string, set: TestSet, beam: number): Promise<Hypotheses> {
  const runtime = await loadModelDir(modelDir);
  try {
    const out: Hypotheses = { texts: [], tokens: [] };
    for (let i = 0; i < set.sources.length; i += DECODE_BATCH) {
      for (const t of await runtime.translate(set.sources.slice(i, i + DECODE_BATCH), { beam })) {
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
export async function testHypotheses(runDir: string, modelDir: string, checkpoint: CheckpointInfo, set: TestSet, beam: number): Promise<Hypotheses> {
  const path = join(runDir, 'eval', `${set.split}-beam${beam}-${checkpoint.sha256.slice(0, 12)}.json`);
  const key = { checkpoint: checkpoint.sha256, beam, testSet: set.fingerprint };
  const hyps = await cachedJson(path, key, hypothesesSchema, () => decode(modelDir, set, beam));
  if (hyps.texts.length !== set.sources.length) throw new Error(`${path}: ${hyps.texts.length} translations for ${set.sources.length} test sentences`);
  return hyps;
}

const SPECIAL_TOKENS: ReadonlySet<string> = new Set(Object.values(SPECIALS).map((s) => s.token));
const words = (tokens: readonly string[]) => tokens.filter((t) => !SPECIAL_TOKENS.has(t));

/**
 * BLEU, chrF, chrF++, vocabulary usage and rare-word rate of the translations, with the references' usage and
 * rate beside them for scale. Training frequencies come from the run's target vocabulary; a word
 * outside it occurred fewer than the vocabulary's minimum count, so it counts 0.
 */
export function scoreTest(
  hyps: Hypotheses,
  set: TestSet,
  opts: { tgtVocab: Vocabulary; tokenizer: string; tgtLang: string; beam: number; rareThreshold: number },
): TestResult {
  const { tgtVocab } = opts;
  if (!tgtVocab.frequencies) throw new Error('the target vocabulary has no training frequencies (vocab.tgt.json predates them); retrain or rebuild it');
  const frequencyOf = (w: string) => tgtVocab.count(w) ?? 0;
  const tok = getTokenizer(opts.tokenizer);
  const produced = hyps.tokens.map(words);
  const references = set.references.map((r) => words(tok.tokenize(r, opts.tgtLang)));
  const rate = rareWordRate(produced, frequencyOf, opts.rareThreshold);
  const refRate = rareWordRate(references, frequencyOf, opts.rareThreshold);
  return {
    split: set.split,
    sentences: set.sources.length,
    beam: opts.beam,
    bleu: corpusBleu(hyps.texts, [set.references], BLEU_OPTIONS).score,
    bleuSignature: bleuSignature(1, BLEU_OPTIONS),
    chrf: corpusChrf(hyps.texts, [set.references], BLEU_OPTIONS).score,
    chrfpp: corpusChrf(hyps.texts, [set.references], { ...BLEU_OPTIONS, wordOrder: 2 }).score,
    chrfSignature: chrfSignature(1, { ...BLEU_OPTIONS, wordOrder: 2 }),
    vocabUsage: vocabularyUsage(produced),
    refVocabUsage: vocabularyUsage(references),
    rareRate: Number.isNaN(rate.rate) ? null : rate.rate,
    refRareRate: Number.isNaN(refRate.rate) ? null : refRate.rate,
    words: rate.words,
  };
}
