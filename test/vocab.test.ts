import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { SPECIALS, Vocabulary } from '../core/vocab.ts';
import { tokenize } from '../core/text/tokenize.ts';
import { multi30kDirOrNull } from './helpers/data-dir.ts';

const sentences = [
  ['a', 'dog', 'runs', '.'],
  ['a', 'cat', 'runs', '.'],
  ['the', 'dog', 'sleeps', '.'],
  ['a', 'bird', '.'],
];

test('SPECIALS are fixed at ids 0..3', () => {
  assert.deepEqual(
    [SPECIALS.pad, SPECIALS.unk, SPECIALS.bos, SPECIALS.eos],
    [
      { token: '<pad>', id: 0 },
      { token: '<unk>', id: 1 },
      { token: '<s>', id: 2 },
      { token: '</s>', id: 3 },
    ],
  );
  assert.ok(Object.isFrozen(SPECIALS));
});

test('build: specials first, then by count desc, ties by string asc', () => {
  const vocab = Vocabulary.build(sentences);
  assert.deepEqual(vocab.toJSON(), [
    '<pad>',
    '<unk>',
    '<s>',
    '</s>',
    '.',
    'a',
    'dog',
    'runs',
    'bird',
    'cat',
    'sleeps',
    'the',
  ]);
  assert.equal(vocab.size, 12);
});

test('build: order does not depend on the order of the input', () => {
  const a = Vocabulary.build(sentences).toJSON();
  const b = Vocabulary.build([...sentences].reverse().map((s) => [...s].reverse())).toJSON();
  assert.deepEqual(a, b);
});

test('build: minFreq and maxSize (specials count toward maxSize)', () => {
  assert.deepEqual(Vocabulary.build(sentences, { minFreq: 2 }).toJSON().slice(4), ['.', 'a', 'dog', 'runs']);
  assert.deepEqual(Vocabulary.build(sentences, { maxSize: 6 }).toJSON(), ['<pad>', '<unk>', '<s>', '</s>', '.', 'a']);
  assert.equal(Vocabulary.build(sentences, { maxSize: 4 }).size, 4);
  assert.throws(() => Vocabulary.build(sentences, { maxSize: 3 }), RangeError);
  assert.throws(() => Vocabulary.build(sentences, { minFreq: 0 }), RangeError);
});

test('build: accepts any iterable (a generator) and skips literal specials in the data', () => {
  function* gen() {
    yield ['<unk>', 'x', '</s>'];
    yield ['x', '<pad>'];
  }
  const vocab = Vocabulary.build(gen());
  assert.deepEqual(vocab.toJSON(), ['<pad>', '<unk>', '<s>', '</s>', 'x']);
  assert.equal(vocab.count('x'), 2);
});

test('frequencies: training counts by id; <unk> counts occurrences left out', () => {
  const vocab = Vocabulary.build(sentences, { minFreq: 2 });
  // dropped: cat, the, sleeps, bird (1 each)
  assert.deepEqual(vocab.frequencies, [0, 4, 0, 0, 4, 3, 2, 2]);
  assert.equal(vocab.count('a'), 3);
  assert.equal(vocab.count('cat'), 0);
  assert.equal(Vocabulary.fromJSON(vocab.toJSON()).frequencies, undefined);
  assert.equal(Vocabulary.fromJSON(vocab.toJSON()).count('a'), undefined);
  assert.deepEqual(Vocabulary.fromJSON(vocab.toJSON(), vocab.frequencies).count('a'), 3);
});

test('encode: unknown tokens map to <unk>; optional <s> and </s>', () => {
  const vocab = Vocabulary.build(sentences);
  const ids = vocab.encode(['a', 'zebra', 'runs']);
  assert.ok(ids instanceof Int32Array);
  assert.deepEqual([...ids], [5, SPECIALS.unk.id, 7]);
  assert.deepEqual([...vocab.encode(['a'], { bos: true, eos: true })], [2, 5, 3]);
  assert.deepEqual([...vocab.encode([], { eos: true })], [3]);
});

test('decode: round trip, stripSpecials keeps <unk>', () => {
  const vocab = Vocabulary.build(sentences);
  const ids = vocab.encode(['a', 'zebra', 'runs'], { bos: true, eos: true });
  assert.deepEqual(vocab.decode(ids), ['<s>', 'a', '<unk>', 'runs', '</s>']);
  assert.deepEqual(vocab.decode([...ids, 0, 0], { stripSpecials: true }), ['a', '<unk>', 'runs']);
  assert.throws(() => vocab.decode([99]), /id 99 is outside 0\.\.11/);
});

test('toJSON/fromJSON round trip, also through JSON.stringify', () => {
  const vocab = Vocabulary.build(sentences);
  const restored = Vocabulary.fromJSON(JSON.parse(JSON.stringify(vocab)) as string[]);
  assert.deepEqual(restored.toJSON(), vocab.toJSON());
  assert.equal(restored.id('dog'), vocab.id('dog'));
  assert.equal(restored.token(6), 'dog');
  assert.ok(restored.has('dog'));
  assert.ok(!restored.has('zebra'));
});

test('fromJSON: rejects lists without the specials in place or with duplicates', () => {
  assert.throws(() => Vocabulary.fromJSON(['<unk>', '<pad>', '<s>', '</s>']), /id 0 must be '<pad>'/);
  assert.throws(() => Vocabulary.fromJSON(['<pad>', '<unk>', '<s>']), /id 3 must be '<\/s>', found '\(missing\)'/);
  assert.throws(() => Vocabulary.fromJSON(['<pad>', '<unk>', '<s>', '</s>', 'a', 'a']), /'a' appears twice/);
  assert.throws(() => Vocabulary.fromJSON(['<pad>', '<unk>', '<s>', '</s>'], [1, 2]), /2 frequencies for 4 tokens/);
});

const DATA = join(multi30kDirOrNull() ?? '(none)', 'val.de.gz');

test(
  'Multi30k val (de): a vocabulary covers its own corpus',
  { skip: !existsSync(DATA) && 'Multi30k data not found' },
  () => {
    const lines = gunzipSync(readFileSync(DATA)).toString('utf8').trimEnd().split('\n');
    const sentences = lines.map((l) => tokenize(l, 'de'));
    const vocab = Vocabulary.build(sentences, { minFreq: 2 });
    const total = sentences.reduce((n, s) => n + s.length, 0);
    assert.equal(total, 12828); // Multi30k README's word count for val.de
    // kept counts plus the <unk> bucket account for every training token
    assert.equal(
      vocab.frequencies!.reduce((a, b) => a + b, 0),
      total,
    );
    const unk = sentences.flat().filter((t) => !vocab.has(t)).length;
    assert.equal(vocab.frequencies![SPECIALS.unk.id], unk);
    assert.equal(vocab.token(4), '.'); // the most frequent token
  },
);
