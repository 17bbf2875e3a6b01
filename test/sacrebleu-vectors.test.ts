/**
 * frost's BLEU, chrF, chrF++ and tokenisers against outputs of the real sacreBLEU, committed as
 * test/fixtures/sacrebleu/sacrebleu-2.6.0.json by test/fixtures/sacrebleu/generate.py (which says how
 * it was run), so the comparison runs in every `npm test` without Python.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import {
  bleuSignature,
  corpusBleu,
  sentenceBleu,
  type BleuOptions,
  type BleuTokenizerName,
} from '../core/metrics/bleu.ts';
import { chrfSignature, corpusChrf, sentenceChrf, type ChrfOptions } from '../core/metrics/chrf.ts';
import { SACREBLEU_VERSION } from '../core/metrics/sacrebleu-version.ts';
import { tokenize13a, tokenizeIntl, tokenizeZh } from '../core/metrics/tokenizers/index.ts';

interface PyChrfOptions {
  char_order: number;
  word_order: number;
  beta: number;
  lowercase: boolean;
  whitespace: boolean;
  eps_smoothing: boolean;
}
interface PyBleuOptions {
  tokenize: BleuTokenizerName;
  lowercase: boolean;
  smooth_method: NonNullable<BleuOptions['smoothMethod']>;
  effective_order: boolean;
}
interface ChrfEntry {
  options: PyChrfOptions;
  corpus: number;
  format: string;
  signature: string;
  sentence?: number[];
}
interface BleuEntry {
  options: PyBleuOptions;
  corpus: number;
  format: string;
  signature: string;
}
interface Corpus {
  hyps: string[];
  refs: string[][];
  bleu: BleuEntry[];
  chrf: ChrfEntry[];
}
interface Vectors {
  version: string;
  tokenizers: { inputs: string[]; '13a': string[]; intl: string[]; zh: string[] };
  latin: Corpus & { sentence_bleu: string[] };
  chinese: Corpus;
  chrf_test_cases: { hyps: string[]; refs: string[][]; scores: ChrfEntry[] }[];
  multi30k?: Record<string, { file: string; lines: number; chrf: ChrfEntry[]; bleu: BleuEntry[] }>;
}

const FIXTURE = fileURLToPath(new URL('./fixtures/sacrebleu/sacrebleu-2.6.0.json', import.meta.url));
const vectors = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Vectors;
const TOLERANCE = 1e-6;

const chrfOptions = (o: PyChrfOptions): ChrfOptions => ({
  charOrder: o.char_order,
  wordOrder: o.word_order,
  beta: o.beta,
  lowercase: o.lowercase,
  whitespace: o.whitespace,
  epsSmoothing: o.eps_smoothing,
});
const bleuOptions = (o: PyBleuOptions): BleuOptions => ({
  tokenize: o.tokenize,
  lowercase: o.lowercase,
  smoothMethod: o.smooth_method,
  effectiveOrder: o.effective_order,
});

function close(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= TOLERANCE, `${what}: frost ${actual}, sacreBLEU ${expected}`);
}

function checkChrf(hyps: string[], refs: string[][], entries: ChrfEntry[], what: string): void {
  for (const entry of entries) {
    const options = chrfOptions(entry.options);
    const label = `${what} ${JSON.stringify(entry.options)}`;
    const score = corpusChrf(hyps, refs, options);
    close(score.score, entry.corpus, label);
    assert.equal(score.format(), entry.format, label);
    assert.equal(chrfSignature(refs.length, options), entry.signature, label);
    entry.sentence?.forEach((expected, i) => {
      close(
        sentenceChrf(
          hyps[i]!,
          refs.map((r) => r[i]!),
          options,
        ).score,
        expected,
        `${label} sentence ${i}`,
      );
    });
  }
}

function checkBleu(hyps: string[], refs: string[][], entries: BleuEntry[], what: string): void {
  for (const entry of entries) {
    const options = bleuOptions(entry.options);
    const score = corpusBleu(hyps, refs, options);
    close(score.score, entry.corpus, `${what} ${JSON.stringify(entry.options)}`);
    assert.equal(score.format(), entry.format);
    assert.equal(bleuSignature(refs.length, options), entry.signature);
  }
}

test('the vectors come from the sacreBLEU release frost names in its signatures', () => {
  assert.equal(vectors.version, SACREBLEU_VERSION);
});

test('tokenisers 13a, intl and zh give sacreBLEU 2.6.0 tokens', () => {
  const { inputs } = vectors.tokenizers;
  assert.deepEqual(inputs.map(tokenize13a), vectors.tokenizers['13a']);
  assert.deepEqual(inputs.map(tokenizeIntl), vectors.tokenizers.intl);
  assert.deepEqual(inputs.map(tokenizeZh), vectors.tokenizers.zh);
});

test('BLEU: corpus scores, formatted lines and signatures for every tokeniser and smoothing', () => {
  checkBleu(vectors.latin.hyps, vectors.latin.refs, vectors.latin.bleu, 'latin');
  checkBleu(vectors.chinese.hyps, vectors.chinese.refs, vectors.chinese.bleu, 'chinese');
});

test('BLEU: sentence scores as sacrebleu.sentence_bleu formats them', () => {
  const { hyps, refs, sentence_bleu: expected } = vectors.latin;
  assert.deepEqual(
    hyps.map((h, i) => sentenceBleu(h, [refs[0]![i]!, refs[1]![i]!]).format()),
    expected,
  );
});

test("chrF/chrF++: sacreBLEU's own test cases (test_chrf.py inputs) under six configurations", () => {
  for (const { hyps, refs, scores } of vectors.chrf_test_cases) checkChrf(hyps, refs, scores, JSON.stringify(hyps));
});

test('chrF/chrF++: corpus and sentence scores on mixed-script and Chinese text, two references', () => {
  checkChrf(vectors.latin.hyps, vectors.latin.refs, vectors.latin.chrf, 'latin');
  checkChrf(vectors.chinese.hyps, vectors.chinese.refs, vectors.chinese.chrf, 'chinese');
});

/** generate.py's `perturb`: the "system output" made from the references. */
function perturb(lines: readonly string[]): string[] {
  return lines.map((text, i) => {
    const words = text.split(' ').filter((_, j) => (i + j) % 7 !== 3);
    if (i % 5 === 0 && words.length > 1) [words[0], words[1]] = [words[1]!, words[0]!];
    const joined = words.join(' ');
    return i % 3 === 0 ? joined.toLowerCase() : joined;
  });
}

const dataRoot = process.env.FROST_DATA ?? fileURLToPath(new URL('../../shared/data', import.meta.url));
const haveMulti30k = existsSync(join(dataRoot, 'multi30k', 'test_2016_flickr.de.gz'));

test(
  'Multi30k test_2016 system outputs (de, cs, en): chrF, chrF++ and BLEU equal sacreBLEU',
  { skip: !haveMulti30k && `Multi30k not found under ${dataRoot} (set FROST_DATA)` },
  () => {
    for (const [lang, entry] of Object.entries(vectors.multi30k ?? {})) {
      const refs = gunzipSync(readFileSync(join(dataRoot, entry.file)))
        .toString('utf8')
        .split('\n');
      if (refs.at(-1) === '') refs.pop();
      assert.equal(refs.length, entry.lines, entry.file);
      const hyps = perturb(refs);
      checkChrf(hyps, [refs], entry.chrf, lang);
      checkBleu(hyps, [refs], entry.bleu, lang);
    }
  },
);
