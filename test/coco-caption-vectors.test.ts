/**
 * Caption scores from raw captions against coco-caption end to end (its Stanford PTBTokenizer step,
 * punctuation list, BLEU, ROUGE-L and CIDEr), on vectors the reference produced:
 * test/fixtures/coco-caption/coco-caption.json, made by test/fixtures/coco-caption/generate.py (which
 * says how).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { evaluateCaptions } from '../core/metrics/caption-eval.ts';
import { pythonSplit } from '../core/metrics/caption-ngrams.ts';
import { cocoBleu } from '../core/metrics/coco-bleu.ts';
import { cocoTokenize, cocoTokenizeCaptions, ptbTokenizeText } from '../core/metrics/ptb-tokenize.ts';
import { getTokenizer } from '../core/text/tokenize.ts';

interface Scores {
  bleu: number[];
  rougeL: number;
  ciderD: number;
}
interface Vectors {
  synthetic: {
    references: string[][];
    hypotheses: string[];
    referenceTokens: string[][];
    hypothesisTokens: string[];
    scores: Scores;
  };
  flickr8k?: { file: string; split: string; images: number; scores: Scores; tokensSha256: string };
}

const vectors = JSON.parse(
  readFileSync(fileURLToPath(new URL('./fixtures/coco-caption/coco-caption.json', import.meta.url)), 'utf8'),
) as Vectors;

function checkScores(hyps: string[], refs: string[][], expected: Scores): void {
  const got = evaluateCaptions(hyps, refs);
  const pairs: [string, number, number][] = [
    ...expected.bleu.map((b, k): [string, number, number] => [
      `BLEU-${k + 1}`,
      [got.bleu1, got.bleu2, got.bleu3, got.bleu4][k]!,
      b,
    ]),
    ['ROUGE-L', got.rougeL, expected.rougeL],
    ['CIDEr-D', got.ciderD, expected.ciderD],
  ];
  for (const [name, actual, want] of pairs) {
    assert.ok(Math.abs(actual - want) <= 1e-6, `${name}: frost ${actual}, coco-caption ${want}`);
  }
}

test('PTB tokenisation and punctuation removal give coco-caption tokens (possessives, hyphens, numbers, quotes)', () => {
  const { hypotheses, hypothesisTokens, references, referenceTokens } = vectors.synthetic;
  assert.deepEqual(cocoTokenizeCaptions(hypotheses), hypothesisTokens);
  assert.deepEqual(cocoTokenizeCaptions(references.flat()), referenceTokens.flat());
});

test('BLEU-1..4, ROUGE-L and CIDEr-D from raw captions equal coco-caption to 1e-6', () => {
  const { hypotheses, references, scores } = vectors.synthetic;
  checkScores(hypotheses, references, scores);
});

test("the training tokeniser would not: neuraltalk's punctuation deletion moves BLEU-1 on these captions", () => {
  const { hypotheses, references, scores } = vectors.synthetic;
  const { tokenize } = getTokenizer('caption');
  const join = (s: string) => tokenize(s, 'en').join(' ');
  const old = cocoBleu(
    hypotheses.map(join),
    references.map((rs) => rs.map(join)),
  );
  assert.ok(Math.abs(old.bleu[3]! - scores.bleu[3]!) > 1e-3, `BLEU-4 ${old.bleu[3]} vs ${scores.bleu[3]}`);
});

test('PTBTokenizer rules that captions hit, one by one', () => {
  const cases: [string, string][] = [
    ["A dog's t-shirt, the man's hat.", "a dog 's t-shirt the man 's hat"],
    ["Don't cannot gonna it's I'm", "do n't can not gon na it 's i 'm"],
    ['“Hi” ‘there’ dog’s "quoted" (3.5) [x] {y}', "hi there dog 's quoted -lrb- 3.5 -rrb- -lsb- x -rsb- -lcb- y -rcb-"],
    ['1,000 1/2 ½ $5 £5 €5 5% 10:30 9/11/2001', '1,000 1/2 1/2 $ 5 # 5 $ 5 5 % 10:30 9/11/2001'],
    ['wow!! why?! ok... hi… a -- b — c – d', 'wow !! why ?! ok hi a b c d'],
    ['etc. The U.S. Army <unk> café', 'etc. the u.s. army <unk> café'],
    ["The dogs' bone 'no entry' rock'n'roll '90s", "the dogs bone no entry rock 'n' roll '90s"],
  ];
  for (const [raw, tokens] of cases) assert.equal(cocoTokenize(raw), tokens, raw);
});

test("words split on Python's whitespace set, as the reference's str.split()", () => {
  assert.deepEqual(pythonSplit('a\u0085b\u001fc\ufeffd\u00a0e'), ['a', 'b', 'c\ufeffd', 'e']);
  assert.deepEqual(pythonSplit(' \u3000 '), []);
});

test('lines: one token list per line; a character no rule knows is deleted', () => {
  assert.deepEqual(ptbTokenizeText('a b\n\nc😀d'), [['a', 'b'], [], ['c', 'd']]);
  // as in the reference, a caption with another line break shifts the captions after it
  assert.deepEqual(cocoTokenizeCaptions(['a\rb', 'c']), ['a', 'b']);
  assert.deepEqual(cocoTokenizeCaptions(['a\nb', 'c']), ['a b', 'c']);
});

/** generate.py's `flickr8k_hypotheses`. */
const flickr8kHypotheses = (refs: string[][]) =>
  refs.map((r, i) => (i % 2 === 0 ? r.at(-1)! : refs[(i + 1) % refs.length]![0]!));

const dataRoot = process.env.FROST_DATA ?? fileURLToPath(new URL('../../shared/data', import.meta.url));
const flickr8kJson = join(dataRoot, 'flickr8k', 'dataset_flickr8k.json');

test(
  'Flickr8k test split: tokens (hashed) and scores equal coco-caption',
  { skip: !existsSync(flickr8kJson) && `Flickr8k not found under ${dataRoot} (set FROST_DATA)` },
  () => {
    const expected = vectors.flickr8k!;
    const data = JSON.parse(readFileSync(flickr8kJson, 'utf8')) as {
      images: { split: string; sentences: { raw: string }[] }[];
    };
    const refs = data.images.filter((im) => im.split === expected.split).map((im) => im.sentences.map((s) => s.raw));
    assert.equal(refs.length, expected.images);
    const hyps = flickr8kHypotheses(refs);
    const refTokens = cocoTokenizeCaptions(refs.flat());
    let at = 0;
    const joined = [
      ...refs.map((r) => refTokens.slice(at, (at += r.length)).join('\t')),
      ...cocoTokenizeCaptions(hyps),
    ].join('\n');
    assert.equal(createHash('sha256').update(joined, 'utf8').digest('hex'), expected.tokensSha256);
    checkScores(hyps, refs, expected.scores);
  },
);
