import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeText } from '../core/subword/normalize.ts';
import { trainBpe } from '../core/subword/bpe-trainer.ts';
import { SubwordModel, SubwordModelError } from '../core/subword/subword-model.ts';
import { encodeModelProto, decodeModelProto, ModelType, PieceType } from '../core/subword/sentencepiece-proto.ts';
import { SPECIALS } from '../core/vocab.ts';
import { loadSubwordTokenizer, subwordVocabulary } from '../core/subword/subword-tokenizer.ts';
import {
  assertPiecesKeepToOneScript,
  assertRoundTripsWithoutUnk,
  HOSTILE,
  MIXED_SCRIPTS,
  TRAINING_CORPUS,
} from './helpers/subword-texts.ts';

describe('subword normalisation', () => {
  test('keeps case and accents; spaces, controls and ▁ collapse to single spaces; surrogates become U+FFFD', () => {
    assert.equal(normalizeText('  Ein\tHund\u0000 LÄUFT  '), 'Ein Hund LÄUFT');
    assert.equal(normalizeText('a\uD800b'), 'a\uFFFDb');
    assert.equal(normalizeText('e\u0301'), '\u00e9');
    assert.equal(normalizeText('x▁y'), 'x y');
    assert.equal(normalizeText('\u00a0\u3000'), '');
  });
});

describe('BPE training and encoding', () => {
  const { model, stats } = trainBpe(TRAINING_CORPUS, { vocabSize: 400 });

  test('the model has frost specials at ids 0..3, 256 byte pieces and learned merges', () => {
    assert.deepEqual(model.tokens.slice(0, 4), ['<pad>', '<unk>', '<s>', '</s>']);
    assert.equal(model.tokens[4], '<0x00>');
    assert.equal(model.tokens[4 + 255], '<0xFF>');
    assert.ok(stats.merges > 50, `only ${stats.merges} merges`);
    assert.ok(model.size <= 400);
    // frequent whole words become single pieces
    assert.deepEqual(model.encodeAsPieces('Ein Hund'), ['▁Ein', '▁Hund']);
  });

  test('training is deterministic', () => {
    assert.deepEqual(trainBpe(TRAINING_CORPUS, { vocabSize: 400 }).model.tokens, model.tokens);
  });

  test('no learned piece mixes scripts (Wiese. is Wiese and .), and ▁ only starts a piece', () => {
    assertPiecesKeepToOneScript(model);
    const mixed = trainBpe(Array.from({ length: 10 }, () => MIXED_SCRIPTS).flat(), { vocabSize: 600 }).model;
    assertPiecesKeepToOneScript(mixed);
  });

  for (const text of HOSTILE) {
    test(`round-trips ${JSON.stringify(text.slice(0, 24))} without <unk>`, () =>
      assertRoundTripsWithoutUnk(model, text));
  }

  test('characters never seen in training are spelled as UTF-8 bytes', () => {
    assert.deepEqual(model.encodeAsPieces('€'), ['▁', '<0xE2>', '<0x82>', '<0xAC>']);
  });

  test('decoding drops <pad>, <s>, </s> and reads malformed byte runs as U+FFFD', () => {
    const ids = [SPECIALS.bos.id, ...model.encode('Ein Hund'), SPECIALS.eos.id, SPECIALS.pad.id];
    assert.equal(model.decode(ids), 'Ein Hund');
    assert.equal(model.decode([model.tokens.indexOf('<0xE2>')]), '\uFFFD');
    assert.throws(() => model.decode([model.size]), RangeError);
  });

  test('merges the highest-scoring pair first, the leftmost on ties (SentencePiece BPE)', () => {
    const pieces = [
      ...model.pieces.slice(0, 260),
      { piece: '▁', score: -10, type: PieceType.NORMAL },
      { piece: 'a', score: -11, type: PieceType.NORMAL },
      { piece: 'b', score: -12, type: PieceType.NORMAL },
      { piece: 'ab', score: -1, type: PieceType.NORMAL },
      { piece: 'ba', score: -2, type: PieceType.NORMAL },
      { piece: '▁a', score: -3, type: PieceType.NORMAL },
    ];
    const toy = SubwordModel.fromPieces(pieces);
    // ▁ a b a: "ab" (score -1) beats "▁a" (-3) and "ba" (-2); then ▁ ab a has nothing left to merge
    assert.deepEqual(toy.encodeAsPieces('aba'), ['▁', 'ab', 'a']);
    // ▁ a b a b: the two "ab" pairs beat "ba" and "▁a"; then "▁"+"ab" is no piece
    assert.deepEqual(toy.encodeAsPieces('b abab'), ['▁', 'b', '▁', 'ab', 'ab']);
    // b a b: "ba" (-2) and "ab" (-1): the higher score wins although it is to the right
    assert.deepEqual(toy.encodeAsPieces('bab'), ['▁', 'b', 'ab']);
  });

  test('refuses bad options', () => {
    assert.throws(() => trainBpe(TRAINING_CORPUS, { vocabSize: 100 }), /vocabSize must be an integer >= 261/);
    assert.throws(() => trainBpe(TRAINING_CORPUS, { maxPieceLength: 1 }), /maxPieceLength/);
  });
});

describe('SentencePiece model file', () => {
  const { model } = trainBpe(TRAINING_CORPUS, { vocabSize: 400 });

  test('round-trips through .model bytes', () => {
    const again = SubwordModel.fromBytes(model.toBytes(), 'x.model');
    assert.deepEqual(again.tokens, model.tokens);
    assert.deepEqual(
      again.pieces.map((p) => p.score),
      model.pieces.map((p) => p.score),
    );
    for (const text of HOSTILE) assert.deepEqual(again.encode(text), model.encode(text));
  });

  test('the file says BPE, byte fallback, identity normaliser and frost special ids', () => {
    const proto = decodeModelProto(model.toBytes());
    assert.equal(proto.trainer_spec.model_type, ModelType.BPE);
    assert.equal(proto.trainer_spec.byte_fallback, true);
    assert.deepEqual(
      [proto.trainer_spec.pad_id, proto.trainer_spec.unk_id, proto.trainer_spec.bos_id, proto.trainer_spec.eos_id],
      [0, 1, 2, 3],
    );
    assert.equal(proto.normalizer_spec.name, 'identity');
  });

  test('a corrupt file is refused with its path', () => {
    const bytes = model.toBytes();
    const cases: [string, Uint8Array][] = [
      ['truncated', bytes.subarray(0, bytes.length - 7)],
      ['garbage', Uint8Array.from({ length: 64 }, (_, i) => (i * 37 + 11) % 256)],
      ['empty', new Uint8Array(0)],
    ];
    for (const [name, data] of cases) {
      assert.throws(
        () => SubwordModel.fromBytes(data, `/models/${name}.model`),
        (err: Error) => err instanceof SubwordModelError && err.message.startsWith(`/models/${name}.model: `),
        name,
      );
    }
  });

  test('a model frost cannot use as trained is refused with its path and the reason', () => {
    const proto = decodeModelProto(model.toBytes());
    const variants: [string, (p: typeof proto) => void, RegExp][] = [
      [
        'word',
        (p) => (p.trainer_spec.model_type = ModelType.WORD),
        /model type 3 is not one frost reads \(bpe 2, unigram 1\)/,
      ],
      ['nobytes', (p) => (p.trainer_spec.byte_fallback = false), /no byte fallback/],
      ['nfkc', (p) => (p.normalizer_spec.name = 'nmt_nfkc'), /normaliser 'nmt_nfkc'/],
      ['spmids', (p) => p.pieces.unshift(p.pieces.splice(1, 1)[0]!), /id 0 must be the special '<pad>'/],
      ['dup', (p) => (p.pieces[300]!.piece = p.pieces[301]!.piece), /appears twice/],
    ];
    for (const [name, edit, reason] of variants) {
      const copy = decodeModelProto(model.toBytes());
      edit(copy);
      assert.throws(
        () => SubwordModel.fromBytes(encodeModelProto(copy), `/m/${name}.model`),
        (err: Error) => err.message.startsWith(`/m/${name}.model: `) && reason.test(err.message),
        name,
      );
    }
  });
});

describe('subword models as a frost tokenizer and vocabulary', () => {
  const { model } = trainBpe(TRAINING_CORPUS, { vocabSize: 400 });
  const other = trainBpe(TRAINING_CORPUS.slice(0, 30), { vocabSize: 300 }).model;
  const files: Record<string, Uint8Array> = { 'joint.model': model.toBytes(), 'other.model': other.toBytes() };
  const read = async (file: string): Promise<Uint8Array> => {
    const bytes = files[file];
    if (bytes === undefined) throw new Error('ENOENT');
    return bytes;
  };

  test('tokenize/detokenize through the vocabulary never meets <unk> and gives back the text', async () => {
    const tok = await loadSubwordTokenizer(
      { de: 'joint.model', en: 'joint.model' },
      { de: model.tokens, en: model.tokens },
      read,
    );
    const vocab = subwordVocabulary(model, TRAINING_CORPUS);
    for (const text of HOSTILE) {
      const ids = vocab.encode(tok.tokenize(text, 'de'));
      assert.ok(!ids.includes(SPECIALS.unk.id));
      assert.equal(tok.detokenize(vocab.decode(ids, { stripSpecials: true }), 'en'), normalizeText(text));
    }
    assert.equal(vocab.count('<unk>'), 0);
    assert.ok(vocab.count('▁Hund')! >= 20);
  });

  test('a model that does not match the card vocabulary, or is missing, is refused with its path', async () => {
    await assert.rejects(
      loadSubwordTokenizer({ en: 'other.model' }, { en: model.tokens }, read, (f) => `/art/${f}`),
      /^SubwordModelError: \/art\/other.model: has \d+ pieces, but the en vocabulary has 400 tokens/,
    );
    await assert.rejects(
      loadSubwordTokenizer({ en: 'gone.model' }, { en: model.tokens }, read, (f) => `/art/${f}`),
      /\/art\/gone.model: cannot read the subword model \(ENOENT\)/,
    );
  });
});
