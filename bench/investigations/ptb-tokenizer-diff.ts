/**
 * Differential check of frost's PTBTokenizer port (core/metrics/ptb-tokenize.ts) against the Java
 * original: generates captions (Flickr8k's own, the same with punctuation, clitics, currency, URLs and
 * smileys injected, and random strings of those pieces), tokenises them with both, and prints every
 * line that differs. Not a test: it needs Java and a CoreNLP 3.4.1 jar (see
 * test/fixtures/coco-caption/generate.py for how to build one).
 *
 *   node --import tsx bench/investigations/ptb-tokenizer-diff.ts --jar stanford-corenlp-3.4.1.jar [--lines 20000]
 *
 * Exits 1 when any line differs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ptbTokenizeText } from '../../core/metrics/ptb-tokenize.ts';
import { SeededRandom } from '../../core/random.ts';

const { values } = parseArgs({
  options: { jar: { type: 'string' }, lines: { type: 'string', default: '20000' }, data: { type: 'string' } },
});
if (!values.jar || !existsSync(values.jar))
  throw new Error('ptb-tokenizer-diff: pass --jar <stanford-corenlp-3.4.1.jar>');
const perKind = Number(values.lines);

const PIECES = [
  "'s",
  '’s',
  "n't",
  '-',
  '--',
  '—',
  '–',
  '"',
  '“',
  '”',
  '‘',
  '’',
  "'",
  '...',
  '…',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  '!',
  '?',
  '?!',
  ';',
  ':',
  ',',
  '.',
  '&',
  '&amp;',
  '$5',
  '£3',
  '€2',
  '½',
  '3/4',
  '1,000',
  '3.5',
  '10:30',
  '2-3',
  '9/11/2001',
  '#1',
  '@home',
  'e-mail',
  't-shirt',
  'U.S.',
  'Mr.',
  'St.',
  'etc.',
  'a.m.',
  "o'clock",
  "rock'n'roll",
  "'90s",
  "50's",
  'cannot',
  'gonna',
  "Don't",
  "I'm",
  '<unk>',
  '<b>',
  'a/b',
  'x-ray',
  'café',
  'naïve',
  '東京',
  '😀',
  '°',
  '×',
  '%',
  '*',
  '+',
  '=',
  '~',
  '|',
  '\\',
  '/',
  '_',
  '^',
  '`',
  '\u00a0',
  '\u3000',
  '\u200b',
  '\t',
  ' ',
  "dogs'",
  "y'all",
  'co.',
  'fig. 3',
  'no. 5',
  'Inc.',
  'Jan.',
  'Dr. Smith',
  'A.',
  'I. The',
  'www.x.com',
  'http://a.b/c',
  'a@b.com',
  ':)',
  ';-)',
  '^_^',
  '<3',
  '2x4',
  '3D',
  'mid-air',
  'black-and-white',
  '\u00ad',
  '\u2044',
  '\r',
  '\u2028',
  '\u0085',
  'The',
  'dog',
];

const rng = new SeededRandom(20261124, 'ptb-diff');
const pick = <T>(xs: readonly T[]): T => xs[rng.int(xs.length)]!;

const dataRoot = values.data ?? process.env.FROST_DATA ?? '../shared/data';
const flickr = join(dataRoot, 'flickr8k', 'dataset_flickr8k.json');
const captions: string[] = existsSync(flickr)
  ? (JSON.parse(readFileSync(flickr, 'utf8')) as { images: { sentences: { raw: string }[] }[] }).images.flatMap((im) =>
      im.sentences.map((s) => s.raw.replaceAll('\n', ' ')),
    )
  : ['A dog runs on the grass .', 'Two children play in the snow', "A man's hat is red ."];

const inputs: string[] = [];
for (let i = 0; i < perKind; i++) inputs.push(captions[i % captions.length]!);
for (let i = 0; i < perKind; i++) {
  const words = pick(captions).split(' ');
  for (let k = 1 + rng.int(4); k > 0; k--) {
    const at = rng.int(words.length + 1);
    const piece = pick(PIECES);
    if (at < words.length && rng.next() < 0.5) words[at] = rng.next() < 0.5 ? words[at] + piece : piece + words[at];
    else words.splice(at, 0, piece);
  }
  inputs.push(words.join(' '));
}
for (let i = 0; i < perKind; i++) inputs.push(Array.from({ length: 1 + rng.int(24) }, () => pick(PIECES)).join(''));

const dir = mkdtempSync(join(tmpdir(), 'frost-ptb-diff-'));
try {
  // One document, as coco-caption writes it: the lexer sees each line in the context of the next.
  const text = inputs.join('\n');
  const file = join(dir, 'input.txt');
  writeFileSync(file, text);
  const java = spawnSync(
    'java',
    ['-cp', values.jar, 'edu.stanford.nlp.process.PTBTokenizer', '-preserveLines', '-lowerCase', file],
    { encoding: 'utf8', maxBuffer: 1 << 30 },
  );
  if (java.status !== 0) throw new Error(`java failed: ${java.stderr}`);
  const expected = java.stdout.split('\n');
  const got = ptbTokenizeText(text).map((line) => line.map((t) => t.toLowerCase()).join(' '));
  let differ = 0;
  expected.forEach((line, i) => {
    if (got[i] === line) return;
    differ++;
    if (differ <= 20) process.stdout.write(`line ${i}\n  java:  ${line}\n  frost: ${got[i]}\n`);
  });
  if (got.length !== expected.length)
    process.stdout.write(`line counts: java ${expected.length}, frost ${got.length}\n`);
  process.stdout.write(`${inputs.length} captions, ${expected.length} output lines, ${differ} differ\n`);
  process.exitCode = differ === 0 && got.length === expected.length ? 0 : 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
