/**
 * The unigram subword model: learning (size, coverage, determinism, scripts), Viterbi encoding against brute
 * force, byte fallback, round trips of hostile text, and the `.model` file and its refusals. spm_encode's
 * agreement is test/subword-unigram-spm.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeText } from '../core/subword/normalize.ts';
import { segmenters } from '../core/subword/segmenter.ts';
import {
  decodeModelProto,
  encodeModelProto,
  ModelType,
  PieceType,
  type SentencePieceObject,
} from '../core/subword/sentencepiece-proto.ts';
import { SPACE_MARK, SubwordModel, SubwordModelError } from '../core/subword/subword-model.ts';
import { SUBWORD_KINDS } from '../core/subword/subword-spec.ts';
import { loadSubwordTokenizer } from '../core/subword/subword-tokenizer.ts';
import { specialAndBytePieces } from '../core/subword/training-words.ts';
import { trainBpe } from '../core/subword/bpe-trainer.ts';
import { digamma, trainUnigram } from '../core/subword/unigram-trainer.ts';
import { makeToyCorpus } from '../train/data/toy-corpus.ts';
import {
  assertPiecesKeepToOneScript,
  assertRoundTripsWithoutUnk,
  HOSTILE,
  SENTENCES,
  TRAINING_CORPUS,
} from './helpers/subword-texts.ts';

const toy = makeToyCorpus({ seed: 5, train: 3000, val: 1, test: 1, lexiconScale: 0.5 });
const toySentences = toy.train.flatMap((p) => [p.src, p.tgt]);

/** A unigram model from hand-set scores (after the specials and byte pieces). */
function handModel(scores: Record<string, number>): SubwordModel {
  const pieces: SentencePieceObject[] = [
    ...specialAndBytePieces(),
    ...Object.entries(scores).map(([piece, score]) => ({ piece, score, type: PieceType.NORMAL })),
  ];
  return SubwordModel.fromPieces(pieces, 'hand', 'unigram');
}

/** Every segmentation of `text` into NORMAL pieces of `model`, with its summed score; brute force. */
function allSegmentations(model: SubwordModel, text: string): { pieces: string[]; score: number }[] {
  const scores = new Map(model.pieces.filter((p) => p.type === PieceType.NORMAL).map((p) => [p.piece, p.score]));
  const chars = Array.from(text);
  const out: { pieces: string[]; score: number }[] = [];
  const walk = (at: number, pieces: string[], score: number): void => {
    if (at === chars.length) {
      out.push({ pieces: [...pieces], score });
      return;
    }
    for (let end = at + 1; end <= chars.length; end++) {
      const piece = chars.slice(at, end).join('');
      const s = scores.get(piece);
      if (s === undefined) continue;
      pieces.push(piece);
      walk(end, pieces, score + s);
      pieces.pop();
    }
  };
  walk(0, [], 0);
  return out;
}

describe('unigram learning', () => {
  const { model, stats } = trainUnigram(TRAINING_CORPUS, { vocabSize: 400 });

  test('the model has exactly the requested size: specials, 256 byte pieces, every character, learned pieces', () => {
    assert.equal(model.size, 400);
    assert.equal(model.kind, 'unigram');
    assert.deepEqual(model.tokens.slice(0, 4), ['<pad>', '<unk>', '<s>', '</s>']);
    assert.equal(model.tokens[4], '<0x00>');
    assert.equal(model.tokens[259], '<0xFF>');
    const normal = new Set(model.tokens.slice(260));
    for (const ch of new Set(Array.from(TRAINING_CORPUS.join(' ').replaceAll(' ', SPACE_MARK))))
      assert.ok(normal.has(ch), ch);
    assert.equal(stats.seedPieces, 462); // fewer than 110% of the target: EM only, no pruning
    // frequent words become single pieces
    assert.deepEqual(model.encodeAsPieces('Ein Hund'), ['▁Ein', '▁Hund']);
    const larger = trainUnigram(toySentences, { vocabSize: 700 });
    assert.equal(larger.model.size, 700);
    assert.ok(larger.stats.pruneRounds >= 1 && larger.stats.emSteps >= 4, JSON.stringify(larger.stats));
  });

  test('scores are log-probabilities, best first', () => {
    const scores = model.pieces.slice(260).map((p) => p.score);
    assert.ok(scores.every((s) => Number.isFinite(s) && s < 0));
    assert.ok(scores.every((s, i) => i === 0 || s <= scores[i - 1]!));
  });

  test('no learned piece mixes scripts (Wiese. is Wiese and .), and ▁ only starts a piece', () =>
    assertPiecesKeepToOneScript(model));

  test('training is deterministic', () => {
    const again = trainUnigram(TRAINING_CORPUS, { vocabSize: 400 }).model;
    assert.deepEqual(again.tokens, model.tokens);
    assert.deepEqual(
      again.pieces.map((p) => p.score),
      model.pieces.map((p) => p.score),
    );
  });

  test('a vocabulary too small for every character leaves the rarest to byte fallback', () => {
    const small = trainUnigram(TRAINING_CORPUS, { vocabSize: 270 }).model;
    assert.equal(small.size, 270);
    for (const text of SENTENCES) assert.equal(small.decode(small.encode(text)), text);
    assert.ok(small.encode('Gitarre').some((id) => small.isByte(id)));
  });

  test('learns from text in any script: every character it saw is a piece, so it needs no byte fallback', () => {
    const mixed = trainUnigram([...TRAINING_CORPUS, ...HOSTILE, ...HOSTILE], { vocabSize: 420 }).model;
    assert.equal(mixed.size, 420);
    for (const text of HOSTILE) {
      const ids = mixed.encode(text);
      assert.ok(!ids.some((id) => mixed.isByte(id)), text);
      assert.equal(mixed.decode(ids), normalizeText(text));
    }
  });

  test('refuses bad options', () => {
    assert.throws(() => trainUnigram(TRAINING_CORPUS, { vocabSize: 100 }), /vocabSize must be an integer >= 261/);
    assert.throws(() => trainUnigram(TRAINING_CORPUS, { maxPieceLength: 1 }), /maxPieceLength/);
    assert.throws(() => trainUnigram(TRAINING_CORPUS, { shrinkingFactor: 1 }), /shrinkingFactor/);
    assert.throws(() => trainUnigram(TRAINING_CORPUS, { emSteps: 0 }), /emSteps/);
  });

  test('digamma: ψ(1) = −γ, ψ(1/2) = −γ − 2 ln 2, ψ(x + 1) = ψ(x) + 1/x', () => {
    const gamma = 0.5772156649015329;
    assert.ok(Math.abs(digamma(1) + gamma) < 1e-12);
    assert.ok(Math.abs(digamma(0.5) + gamma + 2 * Math.LN2) < 1e-12);
    for (const x of [0.01, 0.7, 3.2, 12.5, 1e4])
      assert.ok(Math.abs(digamma(x + 1) - digamma(x) - 1 / x) < 1e-10, `${x}`);
  });
});

describe('unigram encoding', () => {
  const { model } = trainUnigram(toySentences, { vocabSize: 700 });

  test('every piece of a segmentation is in the vocabulary, and it scores as high as any (brute force)', () => {
    const normal = new Set(model.pieces.filter((p) => p.type === PieceType.NORMAL).map((p) => p.piece));
    const score = new Map(model.pieces.map((p) => [p.piece, p.score]));
    const words = [...new Set(toySentences.join(' ').split(' '))].slice(0, 300);
    let checked = 0;
    for (const word of [...words, 'xyzzy', 'aaaa', 'thethe', 'Zwei']) {
      const text = SPACE_MARK + word;
      if (Array.from(text).length > 14 || !Array.from(text).every((ch) => normal.has(ch))) continue;
      const pieces = model.encodeAsPieces(word);
      assert.equal(pieces.join(''), text);
      assert.ok(
        pieces.every((p) => normal.has(p)),
        `${word}: ${pieces.join(' ')}`,
      );
      const ours = pieces.reduce((sum, p) => sum + score.get(p)!, 0);
      const best = Math.max(...allSegmentations(model, text).map((s) => s.score));
      assert.ok(ours >= best - 1e-4, `${word}: ${pieces.join(' ')} scores ${ours}, the best ${best}`);
      checked++;
    }
    assert.ok(checked > 100, `${checked} words checked`);
  });

  test('exact ties go to the path whose last piece is longest, as in SentencePiece', () => {
    const hand = handModel({ [SPACE_MARK]: -1, a: -1, aa: -2, b: -3, ab: -2 });
    // ▁|a|aa and ▁|aa|a both score -4: the candidates for the end are visited by start, first strictly best kept
    assert.deepEqual(hand.encodeAsPieces('aaa'), ['▁', 'a', 'aa']);
    assert.deepEqual(hand.encodeAsPieces('ab'), ['▁', 'ab']);
    assert.deepEqual(hand.encodeAsPieces('aab'), ['▁', 'a', 'ab']);
  });

  test('characters that are not pieces are spelled as UTF-8 bytes, never <unk>', () => {
    assert.deepEqual(model.encodeAsPieces('€'), ['▁', '<0xE2>', '<0x82>', '<0xAC>']);
    const hand = handModel({ [SPACE_MARK]: -1, a: -1, aa: -1.5 });
    assert.deepEqual(hand.encodeAsPieces('aa😀a'), ['▁', 'aa', '<0xF0>', '<0x9F>', '<0x98>', '<0x80>', 'a']);
    assert.equal(hand.decode(hand.encode('aa😀a')), 'aa😀a');
  });

  for (const text of HOSTILE) {
    test(`round-trips ${JSON.stringify(text.slice(0, 24))} without <unk>`, () =>
      assertRoundTripsWithoutUnk(model, text));
  }

  test('a model with pieces across word boundaries is encoded sentence-wide', () => {
    const hand = handModel({ [SPACE_MARK]: -1, a: -1, b: -1, [`a${SPACE_MARK}b`]: -1 });
    assert.deepEqual(hand.encodeAsPieces('a b'), ['▁', `a${SPACE_MARK}b`]);
    assert.deepEqual(hand.encodeAsPieces('b a'), ['▁', 'b', '▁', 'a']);
  });
});

describe('unigram model files', () => {
  const { model } = trainUnigram(TRAINING_CORPUS, { vocabSize: 400 });

  test('segmenters are registered for every subword kind', () => {
    assert.deepEqual([...segmenters.names()].sort(), [...SUBWORD_KINDS].sort());
  });

  test('round-trips through .model bytes: model_type UNIGRAM, float32 scores, same encoding', () => {
    const bytes = model.toBytes();
    const proto = decodeModelProto(bytes);
    assert.equal(proto.trainer_spec.model_type, ModelType.UNIGRAM);
    assert.equal(proto.trainer_spec.byte_fallback, true);
    assert.equal(proto.normalizer_spec.name, 'identity');
    const again = SubwordModel.fromBytes(bytes, 'x.model');
    assert.equal(again.kind, 'unigram');
    assert.deepEqual(again.tokens, model.tokens);
    assert.deepEqual(
      again.pieces.map((p) => p.score),
      model.pieces.map((p) => p.score),
    );
    for (const text of [...HOSTILE, ...SENTENCES]) assert.deepEqual(again.encode(text), model.encode(text));
  });

  test('a corrupt or unusable file is refused with its path and the reason', () => {
    const bytes = model.toBytes();
    assert.throws(
      () => SubwordModel.fromBytes(bytes.subarray(0, bytes.length - 9), '/m/truncated.model'),
      (err: Error) => err instanceof SubwordModelError && err.message.startsWith('/m/truncated.model: '),
    );
    const variants: [string, (p: ReturnType<typeof decodeModelProto>) => void, RegExp][] = [
      ['nan', (p) => (p.pieces[300]!.score = Number.NaN), /piece 300 '.+' has score NaN, not a log-probability/],
      ['inf', (p) => (p.pieces[270]!.score = Number.POSITIVE_INFINITY), /has score Infinity/],
      ['nobytes', (p) => (p.trainer_spec.byte_fallback = false), /no byte fallback/],
      ['word', (p) => (p.trainer_spec.model_type = ModelType.WORD), /model type 3 is not one frost reads/],
    ];
    for (const [name, edit, reason] of variants) {
      const copy = decodeModelProto(bytes);
      edit(copy);
      assert.throws(
        () => SubwordModel.fromBytes(encodeModelProto(copy), `/m/${name}.model`),
        (err: Error) =>
          err instanceof SubwordModelError && err.message.startsWith(`/m/${name}.model: `) && reason.test(err.message),
        name,
      );
    }
  });

  test('a file whose model type is not the card kind is refused with its path', async () => {
    const bpe = trainBpe(TRAINING_CORPUS, { vocabSize: 400 }).model;
    const files: Record<string, Uint8Array> = { 'u.model': model.toBytes(), 'b.model': bpe.toBytes() };
    const read = async (file: string): Promise<Uint8Array> => files[file]!;
    const tok = await loadSubwordTokenizer(
      { en: 'u.model' },
      { en: model.tokens },
      read,
      (f) => `/art/${f}`,
      'unigram',
    );
    assert.equal(tok.model('en').kind, 'unigram');
    await assert.rejects(
      loadSubwordTokenizer({ en: 'b.model' }, { en: bpe.tokens }, read, (f) => `/art/${f}`, 'unigram'),
      /^SubwordModelError: \/art\/b.model: is a bpe model, but its card or run config says unigram/,
    );
    await assert.rejects(
      loadSubwordTokenizer({ en: 'u.model' }, { en: model.tokens }, read, (f) => `/art/${f}`, 'bpe'),
      /\/art\/u.model: is a unigram model, but its card or run config says bpe/,
    );
  });
});
