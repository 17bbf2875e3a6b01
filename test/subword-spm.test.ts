/**
 * frost's subword encoder against an independent implementation: Debian's `sentencepiece` (spm_encode,
 * spm_train; `.ci/run` installs it). Both read the same `.model` file and must produce the same pieces.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { normalizeText } from '../core/subword/normalize.ts';
import { trainBpe } from '../core/subword/bpe-trainer.ts';
import { SubwordModel } from '../core/subword/subword-model.ts';
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
import { MIXED_SCRIPTS as MIXED } from './helpers/subword-texts.ts';

logSpmSkips();
const dir = spmWorkDir('frost-spm-');

describe('frost and spm_encode give the same pieces', { skip: SPM_SKIP }, () => {
  test('a frost-trained model on mixed scripts (byte fallback included)', () => {
    const { model } = trainBpe(Array.from({ length: 10 }, () => MIXED.slice(0, 5)).flat(), { vocabSize: 320 });
    const path = join(dir, 'mixed.model');
    writeFileSync(path, model.toBytes());
    assertSameAsSpm(dir, model, path, MIXED);
  });

  test(
    'the whole Multi30k validation set (de and en), joint 8000-piece model from the training set',
    { skip: MULTI30K_SKIP },
    async () => {
      const [trainDe, trainEn, valDe, valEn] = await Promise.all(
        ['train.de.gz', 'train.en.gz', 'val.de.gz', 'val.en.gz'].map((f) => readGzipLines(join(MULTI30K_DIR, f))),
      );
      const { model } = trainBpe([...trainDe!, ...trainEn!], { vocabSize: 8000 });
      assert.equal(model.size, 8000);
      const path = join(dir, 'm30k.model');
      writeFileSync(path, model.toBytes());
      const val = [...valDe!, ...valEn!];
      assert.equal(val.length, 2028);
      const pieces = assertSameAsSpm(dir, SubwordModel.fromBytes(readFileSync(path), path), path, val);
      assert.ok(pieces > 25_000, `${pieces} pieces`); // about 14 per sentence
    },
  );

  test(
    'a model trained by spm_train (BPE, byte fallback, frost ids) is read and encoded as spm_encode does',
    { skip: MULTI30K_SKIP },
    async () => {
      const val = (await readGzipLines(join(MULTI30K_DIR, 'val.en.gz'))).map(normalizeText);
      const path = spmTrain(dir, val, { modelType: 'bpe', vocabSize: 1000, characterCoverage: 1.0 });
      const model = SubwordModel.fromBytes(readFileSync(path), path);
      assertSameAsSpm(dir, model, path, [...val, ...MIXED]);
    },
  );
});
