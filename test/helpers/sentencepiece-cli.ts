/**
 * Debian's `sentencepiece` command-line tools (spm_encode, spm_train; `.ci/run` installs them) as the
 * independent implementation frost's subword models are checked against, and the Multi30k files those
 * checks encode. Tests skip, saying why, where the tools or the data are missing.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { normalizeText } from '../../core/subword/normalize.ts';
import { SubwordModel } from '../../core/subword/subword-model.ts';
import { multi30kDirOrNull } from './data-dir.ts';

const haveSpm = spawnSync('spm_encode', ['--help'], { stdio: 'ignore' }).error === undefined;

/** Why the spm checks cannot run here, or false when they can (for `describe(..., { skip })`). */
export const SPM_SKIP: string | false = haveSpm ? false : 'spm_encode not found (apt-get install sentencepiece)';

/** The Multi30k directory ('' when there is none: then {@link MULTI30K_SKIP} says so). */
export const MULTI30K_DIR = multi30kDirOrNull() ?? '';

/** Why the Multi30k checks cannot run here, or false when they can. */
export const MULTI30K_SKIP: string | false = existsSync(join(MULTI30K_DIR, 'val.de.gz'))
  ? false
  : 'Multi30k not found (set FROST_DATA)';

/** Prints what is skipped and why, so a log without the test tree still says it. */
export function logSpmSkips(): void {
  if (SPM_SKIP) console.log(`# skipped: ${SPM_SKIP}`);
  else if (MULTI30K_SKIP) console.log(`# Multi30k checks skipped: ${MULTI30K_SKIP}`);
}

/** A fresh temporary directory `prefix…`, deleted after the test file's tests. */
export function spmWorkDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function writeLines(path: string, lines: readonly string[]): void {
  writeFileSync(path, lines.map((l) => `${l}\n`).join(''));
}

/**
 * spm_encode's pieces for each line (lines are frost-normalised: the .model's normaliser is `identity`);
 * the input file goes to `dir`.
 */
function spmPieces(dir: string, modelPath: string, lines: readonly string[]): string[][] {
  const input = join(dir, 'input.txt');
  writeLines(input, lines);
  const out = execFileSync('spm_encode', [`--model=${modelPath}`, '--output_format=piece', `--input=${input}`], {
    encoding: 'utf8',
    maxBuffer: 256 << 20,
  });
  const rows = out.split('\n');
  rows.pop();
  return rows.map((r) => (r === '' ? [] : r.split(' ')));
}

/**
 * Checks that `model` and spm_encode on `modelPath` give the same pieces for every line of `raw` (both
 * frost-normalised); returns how many pieces that was.
 */
export function assertSameAsSpm(dir: string, model: SubwordModel, modelPath: string, raw: readonly string[]): number {
  // spm_encode reads lines, so text with a newline or NUL cannot reach it intact; frost normalises both away.
  const lines = raw.map(normalizeText);
  const spm = spmPieces(dir, modelPath, lines);
  assert.equal(spm.length, lines.length);
  let pieces = 0;
  lines.forEach((line, i) => {
    const ours = model.encodeAsPieces(line);
    assert.deepEqual(ours, spm[i], `line ${i + 1}: ${JSON.stringify(line)}`);
    pieces += ours.length;
  });
  return pieces;
}

/** What spm_train learns beyond frost's fixed settings (identity normaliser, byte fallback, frost's ids). */
export interface SpmTrainOptions {
  modelType: 'bpe' | 'unigram';
  vocabSize: number;
  characterCoverage: number;
  /** Passed as --num_threads when set; spm_train's default otherwise. */
  numThreads?: number;
}

/**
 * Trains a model with spm_train on `lines` (frost-normalised) with frost's special ids, in `dir`;
 * returns the `.model` path and the model as frost reads it.
 */
export function spmTrain(
  dir: string,
  lines: readonly string[],
  options: SpmTrainOptions,
): { path: string; model: SubwordModel } {
  const input = join(dir, 'spm-train.txt');
  writeLines(input, lines);
  const prefix = join(dir, 'spm');
  execFileSync(
    'spm_train',
    [
      `--input=${input}`,
      `--model_prefix=${prefix}`,
      `--model_type=${options.modelType}`,
      `--vocab_size=${options.vocabSize}`,
      '--normalization_rule_name=identity',
      '--byte_fallback=true',
      `--character_coverage=${options.characterCoverage}`,
      '--pad_id=0',
      '--unk_id=1',
      '--bos_id=2',
      '--eos_id=3',
      ...(options.numThreads === undefined ? [] : [`--num_threads=${options.numThreads}`]),
      '--minloglevel=2',
    ],
    { stdio: 'ignore' },
  );
  const path = `${prefix}.model`;
  return { path, model: SubwordModel.fromBytes(readFileSync(path), path) };
}
