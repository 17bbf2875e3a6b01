import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import {
  detokenize,
  getTokenizer,
  mosesTokenize,
  normalizePunctuation,
  tokenize,
  tokenizers,
} from '../core/text/tokenize.ts';
import { multi30kDirOrNull } from './helpers/data-dir.ts';

/** Multi30k raw data: $FROST_DATA/multi30k, else ../shared/data/multi30k (never copied into the repository). */
const DATA_DIR = multi30kDirOrNull() ?? '(none)';
const hasData = existsSync(`${DATA_DIR}/val.en.gz`);
const NO_DATA = `Multi30k data not found at ${DATA_DIR} (set FROST_DATA)`;

function readLines(file: string): string[] {
  const lines = gunzipSync(readFileSync(`${DATA_DIR}/${file}`))
    .toString('utf8')
    .split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

// Expected tokens are Multi30k's lc.norm.tok output (multi30k/dataset, data/task1/tok/*) with the XML
// escaping undone (&apos; -> ', &quot; -> "), where the sentence comes from the data set.
const cases: { lang: string; text: string; tokens: string[] }[] = [
  { lang: 'de', text: 'Ein Hund rennt über die Wiese.', tokens: ['ein', 'hund', 'rennt', 'über', 'die', 'wiese', '.'] },
  // Porting note: Moses splits English contractions as "doesn 't", not the PTB "does n't".
  {
    lang: 'en',
    text: "A man's dog doesn't run.",
    tokens: ['a', 'man', "'s", 'dog', 'doesn', "'t", 'run', '.'],
  },
  {
    lang: 'en',
    text: "One man holds another man's head down and prepares to punch him in the face.",
    tokens: "one man holds another man 's head down and prepares to punch him in the face .".split(' '),
  },
  {
    lang: 'en',
    text: 'A woman on a boat named "El Corazon" drops black weights into the water.',
    tokens: 'a woman on a boat named " el corazon " drops black weights into the water .'.split(' '),
  },
  {
    lang: 'en',
    text: 'Two girls (one dressed in blue, and one dressed in pink) are racing one another on rollerskates.',
    tokens:
      'two girls ( one dressed in blue , and one dressed in pink ) are racing one another on rollerskates .'.split(' '),
  },
  {
    lang: 'en',
    text: 'Five people wearing winter jackets and helmets stand in the snow, with snowmobiles in the background.',
    tokens:
      'five people wearing winter jackets and helmets stand in the snow , with snowmobiles in the background .'.split(
        ' ',
      ),
  },
  { lang: 'en', text: 'A child is splashing in the water', tokens: 'a child is splashing in the water'.split(' ') },
  {
    lang: 'en',
    text: 'A father-figure and two children outside their home.',
    tokens: ['a', 'father-figure', 'and', 'two', 'children', 'outside', 'their', 'home', '.'],
  },
  { lang: 'en', text: "Music from the 1990's.", tokens: ['music', 'from', 'the', '1990', "'s", '.'] },
  {
    lang: 'en',
    text: 'About 1,000 people paid $3.50 each.',
    tokens: 'about 1,000 people paid $ 3.50 each .'.split(' '),
  },
  // en normalisation moves the period inside the quotes ("93". -> "93.")
  {
    lang: 'en',
    text: 'A kid crosscountry skis wearing the number "93".',
    tokens: ['a', 'kid', 'crosscountry', 'skis', 'wearing', 'the', 'number', '"', '93', '.', '"'],
  },
  { lang: 'en', text: 'Wait... what?', tokens: ['wait', '...', 'what', '?'] },
  {
    lang: 'de',
    text: 'Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.',
    tokens: 'zwei junge weiße männer sind im freien in der nähe vieler büsche .'.split(' '),
  },
  {
    lang: 'de',
    text: 'Ein Jugendlicher in einem schwarzen T-Shirt mit dem Aufdruck "Asian Pacific 2007" sitzt.',
    tokens: 'ein jugendlicher in einem schwarzen t-shirt mit dem aufdruck " asian pacific 2007 " sitzt .'.split(' '),
  },
  // German gets the generic apostrophe rule: split on both sides.
  {
    lang: 'de',
    text: "Zwei Jungen essen ihr McDonald's-Menü im Außenbereich, umgeben von vielen anderen Leuten.",
    tokens: "zwei jungen essen ihr mcdonald ' s-menü im außenbereich , umgeben von vielen anderen leuten .".split(' '),
  },
  // The 2017 Moses keeps the period on a line-final non-breaking prefix (German ordinals 1..99).
  {
    lang: 'de',
    text: 'Der Basketballspieler im weißen Trikot mit der Nummer 55 deckt den Spieler im schwarzen Trikot mit der Nummer 10.',
    tokens:
      'der basketballspieler im weißen trikot mit der nummer 55 deckt den spieler im schwarzen trikot mit der nummer 10.'.split(
        ' ',
      ),
  },
  { lang: 'de', text: 'Ein Mann trinkt 3,5 Liter.', tokens: ['ein', 'mann', 'trinkt', '3,5', 'liter', '.'] },
  { lang: 'de', text: 'Ein „Hund“ – schön…', tokens: ['ein', '"', 'hund', '"', '-', 'schön', '...'] },
  {
    lang: 'fr',
    text: "Un terrier de Boston court sur l'herbe verdoyante devant une clôture blanche.",
    tokens: "un terrier de boston court sur l' herbe verdoyante devant une clôture blanche .".split(' '),
  },
  {
    lang: 'fr',
    text: "Cinq personnes avec des vestes d'hiver et des casques sont debout dans la neige, avec des motoneiges en arrière-plan.",
    tokens:
      "cinq personnes avec des vestes d' hiver et des casques sont debout dans la neige , avec des motoneiges en arrière-plan .".split(
        ' ',
      ),
  },
  { lang: 'fr', text: "L'homme regarde l'eau.", tokens: ["l'", 'homme', 'regarde', "l'", 'eau', '.'] },
  // "sec" and "art" are French non-breaking prefixes: a line-final one keeps its period.
  {
    lang: 'fr',
    text: 'Un caniche noir joue avec un autre chien sur un terrain sec.',
    tokens: 'un caniche noir joue avec un autre chien sur un terrain sec.'.split(' '),
  },
  {
    lang: 'fr',
    text: "Des gens admirent une œuvre d'art.",
    tokens: ['des', 'gens', 'admirent', 'une', 'œuvre', "d'", 'art.'],
  },
];

for (const { lang, text, tokens } of cases) {
  test(`tokenize(${lang}): ${text}`, () => {
    assert.deepEqual(tokenize(text, lang), tokens);
  });
}

test('tokenize: empty and blank lines give no tokens', () => {
  assert.deepEqual(tokenize('', 'en'), []);
  assert.deepEqual(tokenize('  \t ', 'de'), []);
});

test('tokenize: a word with a final period mid-line stays whole before a lower-case word (Moses)', () => {
  // Multi30k is lower-cased before tokenising, so "sits." looks like an abbreviation here.
  assert.deepEqual(tokenize('A man sits. A dog runs.', 'en'), ['a', 'man', 'sits.', 'a', 'dog', 'runs', '.']);
});

test('tokenize: never yields empty tokens (".\'" at the end leaves double spaces)', () => {
  const tokens = tokenize('A man and a woman on a motorcycle .`', 'en');
  assert.deepEqual(tokens, ['a', 'man', 'and', 'a', 'woman', 'on', 'a', 'motorcycle', '.', "'"]);
});

test('tokenize: no XML escaping (tokenizer.perl -no-escape)', () => {
  assert.deepEqual(tokenize('Tom & Jerry <3 [x] a|b', 'en'), [
    'tom',
    '&',
    'jerry',
    '<',
    '3',
    '[',
    'x',
    ']',
    'a',
    '|',
    'b',
  ]);
});

test('normalizePunctuation: Moses rules', () => {
  assert.equal(normalizePunctuation('a ( b ) , c', 'en'), 'a (b), c');
  assert.equal(normalizePunctuation('„x“ and ”y”', 'de'), '"x" and "y"');
  assert.equal(normalizePunctuation('it’s ‘q’', 'en'), "it's 'q\"");
  assert.equal(normalizePunctuation('« bonjour »', 'fr'), '"bonjour"');
  assert.equal(normalizePunctuation('He said "hi".', 'en'), 'He said "hi."');
  assert.equal(normalizePunctuation('Er sagte "hallo", dann', 'de'), 'Er sagte "hallo", dann');
  assert.equal(normalizePunctuation('1\u00a0000', 'fr'), '1,000');
  assert.equal(normalizePunctuation('1\u00a0000', 'en'), '1.000');
});

test('mosesTokenize: multi-dots, commas in numbers, A,B,C', () => {
  assert.equal(mosesTokenize('so.... yes', 'en'), 'so .... yes');
  assert.equal(mosesTokenize('5,300 and a,b,c', 'en'), '5,300 and a , b , c');
  assert.equal(mosesTokenize('they paid 5,', 'en'), 'they paid 5 ,');
});

// detokenize(tokenize(x)) gives x back, lower-cased, for ordinary sentences.
const roundTrips: { lang: string; text: string }[] = [
  { lang: 'en', text: 'Two young, White males are outside near many bushes.' },
  { lang: 'en', text: "A man's dog doesn't run." },
  { lang: 'en', text: 'A woman on a boat named "El Corazon" drops black weights into the water.' },
  {
    lang: 'en',
    text: 'Two girls (one dressed in blue, and one dressed in pink) are racing one another on rollerskates.',
  },
  { lang: 'en', text: "The Jones' house is big; it costs $500,000!" },
  { lang: 'de', text: 'Ein Jugendlicher in einem schwarzen T-Shirt mit dem Aufdruck "Asian Pacific 2007" sitzt.' },
  { lang: 'de', text: 'Mehrere Männer mit Schutzhelmen bedienen ein Antriebsradsystem.' },
  { lang: 'fr', text: "Un terrier de Boston court sur l'herbe verdoyante devant une clôture blanche." },
  { lang: 'fr', text: "Un garçon essaie d'éviter de sortir du marbre, tandis que le receveur essaie de l'attraper." },
];

for (const { lang, text } of roundTrips) {
  test(`detokenize(tokenize(${lang})) round trip: ${text}`, () => {
    assert.equal(detokenize(tokenize(text, lang), lang), text.toLowerCase());
  });
}

test('detokenize: French spaced punctuation and PTB-style English', () => {
  assert.equal(detokenize(['quoi', '?'], 'fr'), 'quoi ?');
  assert.equal(detokenize(['i', 'do', "n't", 'know', '.'], 'en'), "i don't know.");
  assert.equal(detokenize(['(', 'a', ')', '"', 'b', '"', '¿', 'c', '?'], 'es'), '(a) "b" ¿c?');
});

test('tokenizers registry', () => {
  assert.deepEqual(Object.keys(tokenizers).sort(), ['caption', 'multi30k', 'whitespace']);
  assert.equal(getTokenizer('multi30k').tokenize, tokenize);
  assert.deepEqual(getTokenizer('whitespace').tokenize('  A  b\tc. ', 'en'), ['A', 'b', 'c.']);
  assert.equal(getTokenizer('whitespace').detokenize(['A', 'b'], 'en'), 'A b');
  assert.throws(() => getTokenizer('bpe'), /unknown tokenizer 'bpe' \(known: multi30k, whitespace, caption\)/);
  assert.throws(() => getTokenizer('toString'), /unknown tokenizer/);
});

// Multi30k README (multi30k/dataset) lists `wc -w` of every lc.norm.tok file; XML escaping does not
// change token counts, so the counts must match exactly.
const wordCounts: Record<string, Record<string, number>> = {
  train: { en: 377534, de: 360706, fr: 409845 },
  val: { en: 13308, de: 12828, fr: 14381 },
  test_2016_flickr: { en: 12968, de: 12103, fr: 13988 },
};

for (const [split, byLang] of Object.entries(wordCounts)) {
  test(`Multi30k ${split}: token counts match the released lc.norm.tok files`, { skip: !hasData && NO_DATA }, () => {
    for (const [lang, expected] of Object.entries(byLang)) {
      const lines = readLines(`${split}.${lang}.gz`);
      let n = 0;
      for (const line of lines) n += tokenize(line, lang).length;
      assert.equal(n, expected, `${split}.${lang}`);
    }
  });
}

test(
  'Multi30k val: detokenize(tokenize(x)) gives x back (lower-cased) for >= 99% of lines',
  { skip: !hasData && NO_DATA },
  () => {
    for (const lang of ['en', 'de', 'fr']) {
      const lines = readLines(`val.${lang}.gz`);
      const same = lines.filter((l) => detokenize(tokenize(l, lang), lang) === l.toLowerCase().trim()).length;
      assert.ok(same / lines.length >= 0.99, `${lang}: ${same}/${lines.length}`);
    }
  },
);
