/**
 * frost's unigram encoder against an independent implementation: Debian's `sentencepiece` (spm_encode,
 * spm_train; `.ci/run` installs it). Both read the same `.model` file and must produce the same pieces, for
 * models frost learned and for a model spm_train learned.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
import { resolveDataRoot } from '../train/data/paths.ts';

const haveSpm = spawnSync('spm_encode', ['--help'], { stdio: 'ignore' }).error === undefined;
const SPM_SKIP = haveSpm ? false : 'spm_encode not found (apt-get install sentencepiece)';
const dataRoot = resolveDataRoot();
const M30K = dataRoot === null ? '' : join(dataRoot, 'multi30k');
const DATA_SKIP = existsSync(join(M30K, 'val.de.gz')) ? false : 'Multi30k not found (set FROST_DATA)';
if (SPM_SKIP) console.log(`# skipped: ${SPM_SKIP}`);
else if (DATA_SKIP) console.log(`# Multi30k checks skipped: ${DATA_SKIP}`);

const dir = mkdtempSync(join(tmpdir(), 'frost-spm-unigram-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** spm_encode's pieces for each line (lines are frost-normalised: the .model's normaliser is `identity`). */
function spmPieces(modelPath: string, lines: readonly string[]): string[][] {
  const input = join(dir, 'input.txt');
  writeFileSync(input, lines.map((l) => `${l}\n`).join(''));
  const out = execFileSync('spm_encode', [`--model=${modelPath}`, '--output_format=piece', `--input=${input}`], {
    encoding: 'utf8',
    maxBuffer: 256 << 20,
  });
  const rows = out.split('\n');
  rows.pop();
  return rows.map((r) => (r === '' ? [] : r.split(' ')));
}

/** Writes `model` to `name`, reads it back, and checks both encoders agree on every line; returns the pieces. */
function assertSamePieces(model: SubwordModel, name: string, raw: readonly string[]): number {
  const path = join(dir, name);
  writeFileSync(path, model.toBytes());
  const fromFile = SubwordModel.fromBytes(readFileSync(path), path);
  // spm_encode reads lines, so text with a newline or NUL cannot reach it intact; frost normalises both away.
  const lines = raw.map(normalizeText);
  const spm = spmPieces(path, lines);
  assert.equal(spm.length, lines.length);
  let pieces = 0;
  lines.forEach((line, i) => {
    const ours = fromFile.encodeAsPieces(line);
    assert.deepEqual(ours, spm[i], `line ${i + 1}: ${JSON.stringify(line)}`);
    assert.deepEqual(model.encodeAsPieces(line), ours, `line ${i + 1}: the in-memory model differs from its file`);
    pieces += ours.length;
  });
  return pieces;
}

const MIXED = [
  'Ein Boston Terrier läuft über saftig-grünes Gras.',
  'A Boston terrier is running on lush green grass.',
  'Zwei Männer spielen Fußball im Park; ein Kind schaut zu.',
  'Un homme en chemise bleue joue de la guitare.',
  'Muž v modré košili hraje na kytaru.',
  '漢字とひらがな、한국어 문장 😀🐕‍🦺 👍🏽',
  'שלום עולם، مرحبا بالعالم',
  'e\u0301 n\u0303 Z\u0336\u0317a\u0334l\u0335g\u0337o',
  '<unk> <s> </s> <0x41> ⁇',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ababababababab ...... !!!!!!! 0000000',
];

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

  describe('the whole Multi30k validation set (de and en)', { skip: DATA_SKIP }, () => {
    const data = Promise.all(
      ['train.de.gz', 'train.en.gz', 'val.de.gz', 'val.en.gz'].map((f) => readGzipLines(join(M30K, f))),
    );

    test('a joint 8000-piece model learned from the training set', async () => {
      const [trainDe, trainEn, valDe, valEn] = await data;
      const { model } = trainUnigram([...trainDe!, ...trainEn!], { vocabSize: 8000 });
      assert.equal(model.size, 8000);
      const val = [...valDe!, ...valEn!];
      assert.equal(val.length, 2028);
      const pieces = assertSamePieces(model, 'm30k-joint.model', [...val, ...MIXED]);
      assert.ok(pieces > 25_000, `${pieces} pieces`); // about 14 per sentence
    });

    test('a German and an English 4000-piece model, each learned from its side', async () => {
      const [trainDe, trainEn, valDe, valEn] = await data;
      for (const [lang, train, val] of [
        ['de', trainDe!, valDe!],
        ['en', trainEn!, valEn!],
      ] as const) {
        const { model } = trainUnigram(train, { vocabSize: 4000 });
        assert.equal(model.size, 4000, lang);
        assertSamePieces(model, `m30k-${lang}.model`, [...val, ...MIXED]);
      }
    });

    test('a model learned by spm_train (unigram, byte fallback, frost ids) is read and encoded as spm_encode does', async () => {
      const [, , valDe, valEn] = await data;
      const val = [...valDe!, ...valEn!].map(normalizeText);
      const input = join(dir, 'spm-train.txt');
      writeFileSync(input, val.map((l) => `${l}\n`).join(''));
      const prefix = join(dir, 'spm');
      execFileSync(
        'spm_train',
        [
          `--input=${input}`,
          `--model_prefix=${prefix}`,
          '--model_type=unigram',
          '--vocab_size=2000',
          '--normalization_rule_name=identity',
          '--byte_fallback=true',
          '--character_coverage=0.9995',
          '--pad_id=0',
          '--unk_id=1',
          '--bos_id=2',
          '--eos_id=3',
          '--num_threads=1',
          '--minloglevel=2',
        ],
        { stdio: 'ignore' },
      );
      const path = `${prefix}.model`;
      const model = SubwordModel.fromBytes(readFileSync(path), path);
      assert.equal(model.kind, 'unigram');
      // character_coverage < 1 leaves rare characters out, so spm's own model exercises the unknown path too.
      const lines = [...val, ...MIXED].map(normalizeText);
      const spm = spmPieces(path, lines);
      lines.forEach((line, i) => assert.deepEqual(model.encodeAsPieces(line), spm[i], `line ${i + 1}: ${line}`));
    });
  });
});
