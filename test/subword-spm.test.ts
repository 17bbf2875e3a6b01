/**
 * frost's subword encoder against an independent implementation: Debian's `sentencepiece` (spm_encode,
 * spm_train; `.ci/run` installs it). Both read the same `.model` file and must produce the same pieces.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { normalizeText } from '../core/subword/normalize.ts';
import { trainBpe } from '../core/subword/bpe-trainer.ts';
import { SubwordModel } from '../core/subword/subword-model.ts';
import { readGzipLines } from '../train/data/multi30k.ts';
import { resolveDataRoot } from '../train/data/paths.ts';

const haveSpm = spawnSync('spm_encode', ['--help'], { stdio: 'ignore' }).error === undefined;
const SPM_SKIP = haveSpm ? false : 'spm_encode not found (apt-get install sentencepiece)';
const dataRoot = resolveDataRoot();
const M30K = dataRoot === null ? '' : join(dataRoot, 'multi30k');
const DATA_SKIP = existsSync(join(M30K, 'val.de.gz')) ? false : 'Multi30k not found (set FROST_DATA)';

const dir = mkdtempSync(join(tmpdir(), 'frost-spm-'));
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

function assertSamePieces(model: SubwordModel, modelPath: string, raw: readonly string[]): number {
  // spm_encode reads lines, so text with a newline or NUL cannot reach it intact; frost normalises both away.
  const lines = raw.map(normalizeText);
  const spm = spmPieces(modelPath, lines);
  assert.equal(spm.length, lines.length);
  let pieces = 0;
  lines.forEach((line, i) => {
    const ours = model.encodeAsPieces(line);
    assert.deepEqual(ours, spm[i], `line ${i + 1}: ${JSON.stringify(line)}`);
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
];

describe('frost and spm_encode give the same pieces', { skip: SPM_SKIP }, () => {
  test('a frost-trained model on mixed scripts (byte fallback included)', () => {
    const { model } = trainBpe(Array.from({ length: 10 }, () => MIXED.slice(0, 5)).flat(), { vocabSize: 320 });
    const path = join(dir, 'mixed.model');
    writeFileSync(path, model.toBytes());
    assertSamePieces(model, path, MIXED);
  });

  test(
    'the whole Multi30k validation set (de and en), joint 8000-piece model from the training set',
    { skip: DATA_SKIP },
    async () => {
      const [trainDe, trainEn, valDe, valEn] = await Promise.all(
        ['train.de.gz', 'train.en.gz', 'val.de.gz', 'val.en.gz'].map((f) => readGzipLines(join(M30K, f))),
      );
      const { model } = trainBpe([...trainDe!, ...trainEn!], { vocabSize: 8000 });
      assert.equal(model.size, 8000);
      const path = join(dir, 'm30k.model');
      writeFileSync(path, model.toBytes());
      const val = [...valDe!, ...valEn!];
      assert.equal(val.length, 2028);
      const pieces = assertSamePieces(SubwordModel.fromBytes(readFileSync(path), path), path, val);
      assert.ok(pieces > 25_000, `${pieces} pieces`); // about 14 per sentence
    },
  );

  test(
    'a model trained by spm_train (BPE, byte fallback, frost ids) is read and encoded as spm_encode does',
    { skip: DATA_SKIP },
    async () => {
      const val = (await readGzipLines(join(M30K, 'val.en.gz'))).map(normalizeText);
      const input = join(dir, 'spm-train.txt');
      writeFileSync(input, val.map((l) => `${l}\n`).join(''));
      const prefix = join(dir, 'spm');
      execFileSync(
        'spm_train',
        [
          `--input=${input}`,
          `--model_prefix=${prefix}`,
          '--model_type=bpe',
          '--vocab_size=1000',
          '--normalization_rule_name=identity',
          '--byte_fallback=true',
          '--character_coverage=1.0',
          '--pad_id=0',
          '--unk_id=1',
          '--bos_id=2',
          '--eos_id=3',
          '--minloglevel=2',
        ],
        { stdio: 'ignore' },
      );
      const path = `${prefix}.model`;
      const model = SubwordModel.fromBytes(readFileSync(path), path);
      assertSamePieces(model, path, [...val, ...MIXED]);
    },
  );
});
