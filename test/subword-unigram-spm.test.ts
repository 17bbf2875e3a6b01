/**
 * frost's unigram encoder against an independent implementation: Debian's `sentencepiece` (spm_encode,
 * spm_train; `.ci/run` installs it). Both read the same `.model` file and must produce the same pieces, for
 * models frost learned and for a model spm_train learned. The models frost learns from Multi30k's training
 * sets are cached (learned-unigram.ts): learning them is most of this file's time, and it is what they
 * encode that is checked here.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { normalizeText } from '../core/subword/normalize.ts';
import {
  decodeModelProto,
  ModelType,
  PieceType,
  type SentencePieceObject,
} from '../core/subword/sentencepiece-proto.ts';
import { SubwordModel } from '../core/subword/subword-model.ts';
import { specialAndBytePieces } from '../core/subword/training-words.ts';
import { trainUnigram } from '../core/subword/unigram-trainer.ts';
import { readGzipLines } from '../train/data/multi30k.ts';
import {
  assertSameAsSpm,
  logSpmSkips,
  MULTI30K_DIR,
  MULTI30K_SKIP,
  SPM_SKIP,
  spmTrain,
  spmWorkDir,
} from './helpers/sentencepiece-cli.ts';
import { cachedLearnedUnigram, type LearnedUnigramSpec } from './helpers/learned-unigram.ts';
import { MIXED_SCRIPTS } from './helpers/subword-texts.ts';

logSpmSkips();
const dir = spmWorkDir('frost-spm-unigram-');

/**
 * Writes `model` to `name`, reads it back, and checks spm_encode and the file's model agree on every line, and the
 * in-memory model with its file; returns the pieces.
 */
function assertSamePieces(model: SubwordModel, name: string, raw: readonly string[]): number {
  const path = join(dir, name);
  writeFileSync(path, model.toBytes());
  const fromFile = SubwordModel.fromBytes(readFileSync(path), path);
  const pieces = assertSameAsSpm(dir, fromFile, path, raw);
  raw.map(normalizeText).forEach((line, i) => {
    const ours = fromFile.encodeAsPieces(line);
    assert.deepEqual(model.encodeAsPieces(line), ours, `line ${i + 1}: the in-memory model differs from its file`);
  });
  return pieces;
}

/**
 * {@link assertSamePieces} for a model learned by {@link cachedLearnedUnigram}: the `.model` it wrote, checked
 * against spm_encode, and against the pieces the model gave as learned. Returns the learned model's size and
 * the pieces.
 */
async function assertSameLearnedPieces(
  spec: LearnedUnigramSpec,
  name: string,
): Promise<{ size: number; pieces: number }> {
  const { bytes, size, learnedPieces } = await cachedLearnedUnigram(spec);
  const path = join(dir, name);
  writeFileSync(path, bytes);
  const fromFile = SubwordModel.fromBytes(readFileSync(path), path);
  const pieces = assertSameAsSpm(dir, fromFile, path, spec.lines);
  spec.lines.map(normalizeText).forEach((line, i) => {
    const ours = fromFile.encodeAsPieces(line);
    assert.deepEqual(learnedPieces[i], ours, `line ${i + 1}: the in-memory model differs from its file`);
  });
  return { size, pieces };
}

/** Mixed scripts, and runs of one character: exact ties between segmentations. */
const MIXED = [...MIXED_SCRIPTS, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ababababababab ...... !!!!!!! 0000000'];

describe('frost and spm_encode give the same unigram pieces', { skip: SPM_SKIP }, () => {
  test('a frost-learned model on mixed scripts (byte fallback and exact ties included)', () => {
    const { model } = trainUnigram(Array.from({ length: 10 }, () => MIXED.slice(0, 5)).flat(), { vocabSize: 320 });
    assert.equal(decodeModelProto(model.toBytes()).trainer_spec.model_type, ModelType.UNIGRAM);
    assertSamePieces(model, 'mixed.model', MIXED);
  });

  test('hand-set scores with exact ties, and characters that are no piece', () => {
    const scores: Record<string, number> = {
      '\u2581': -1,
      a: -1,
      aa: -2,
      aaa: -3,
      b: -3,
      ab: -2,
      ba: -2.5,
      '\u2581a': -2,
    };
    const pieces: SentencePieceObject[] = [
      ...specialAndBytePieces(),
      ...Object.entries(scores).map(([piece, score]) => ({ piece, score, type: PieceType.NORMAL })),
    ];
    const model = SubwordModel.fromPieces(pieces, 'hand', 'unigram');
    const lines = ['aaa', 'aab', 'aaaaaaa', 'a b aa', 'baba abab', 'aaaa aaaaa', 'acab', 'c', 'a😀a aa€'];
    assertSamePieces(model, 'hand.model', lines);
    // A piece across a word boundary (as `spm_train --split_by_whitespace=false` makes): encoded sentence-wide.
    const across = SubwordModel.fromPieces(
      [...pieces, { piece: 'a\u2581b', score: -2.5, type: PieceType.NORMAL }],
      'across',
      'unigram',
    );
    assertSamePieces(across, 'across.model', [...lines, 'a b a b', 'aa ba b']);
  });

  describe('the whole Multi30k validation set (de and en)', { skip: MULTI30K_SKIP }, () => {
    const data = Promise.all(['val.de.gz', 'val.en.gz'].map((f) => readGzipLines(join(MULTI30K_DIR, f))));
    const trainFile = (lang: string) => join(MULTI30K_DIR, `train.${lang}.gz`);

    test('a joint 8000-piece model learned from the training set', async () => {
      const [valDe, valEn] = await data;
      const val = [...valDe!, ...valEn!];
      assert.equal(val.length, 2028);
      const { size, pieces } = await assertSameLearnedPieces(
        { trainFiles: [trainFile('de'), trainFile('en')], vocabSize: 8000, lines: [...val, ...MIXED] },
        'm30k-joint.model',
      );
      assert.equal(size, 8000);
      assert.ok(pieces > 25_000, `${pieces} pieces`); // about 14 per sentence
    });

    test('a German and an English 4000-piece model, each learned from its side', async () => {
      const [valDe, valEn] = await data;
      for (const [lang, val] of [
        ['de', valDe!],
        ['en', valEn!],
      ] as const) {
        const { size } = await assertSameLearnedPieces(
          { trainFiles: [trainFile(lang)], vocabSize: 4000, lines: [...val, ...MIXED] },
          `m30k-${lang}.model`,
        );
        assert.equal(size, 4000, lang);
      }
    });

    test('a model learned by spm_train (unigram, byte fallback, frost ids) is read and encoded as spm_encode does', async () => {
      const [valDe, valEn] = await data;
      const val = [...valDe!, ...valEn!].map(normalizeText);
      const { path, model } = spmTrain(dir, val, {
        modelType: 'unigram',
        vocabSize: 2000,
        characterCoverage: 0.9995,
        numThreads: 1,
      });
      assert.equal(model.kind, 'unigram');
      // character_coverage < 1 leaves rare characters out, so spm's own model exercises the unknown path too.
      assertSameAsSpm(dir, model, path, [...val, ...MIXED]);
    });
  });
});
