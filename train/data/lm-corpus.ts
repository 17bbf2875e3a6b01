import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { imagesOf, loadCaptionDataset } from './captions.ts';
import { readGzipLines, splitLines } from './multi30k.ts';
import { multi30kDir, resolveDataRoot } from './paths.ts';

/**
 * Plain-text corpora for language modelling: one sentence or paragraph per line, raw text (the
 * task's tokeniser splits it). Penn Treebank (Mikolov's ptb.*.txt) and WikiText-2 (wiki.*.tokens)
 * are such corpora and are read by the same reader; blank lines (WikiText's) are skipped.
 */
export type LmSplit = 'train' | 'valid' | 'test';
export const LM_SPLITS: readonly LmSplit[] = ['train', 'valid', 'test'];

export interface LmText {
  /** What was read, for the log and the run's summary. */
  name: string;
  lines: Record<LmSplit, string[]>;
}

/** File names tried for each split in a corpus folder, in order. */
const SPLIT_FILES: Record<LmSplit, string[]> = {
  train: ['train.txt', 'ptb.train.txt', 'wiki.train.tokens', 'wiki.train.raw', 'train'],
  valid: ['valid.txt', 'val.txt', 'ptb.valid.txt', 'wiki.valid.tokens', 'wiki.valid.raw', 'valid'],
  test: ['test.txt', 'ptb.test.txt', 'wiki.test.tokens', 'wiki.test.raw', 'test'],
};

/** Fractions of a single file's lines that go to valid and test (its last lines, in order). */
export interface SplitFractions {
  valid: number;
  test: number;
}

async function readLines(path: string): Promise<string[]> {
  const text = await readFile(path, 'utf8').catch((err: unknown) => {
    throw new Error(`${path}: ${(err as Error).message}`, { cause: err });
  });
  return splitLines(text).filter((l) => l.trim().length > 0);
}

/**
 * Reads a corpus: a folder with train/valid/test files (names in SPLIT_FILES), or one file whose
 * last lines become valid and test by `split` (kept in order: a stream's context must not be
 * shuffled across the split).
 * @throws Error naming the path when it is missing, a split file is missing, or a split is empty
 */
export async function readLmText(path: string, split: SplitFractions = { valid: 0.05, test: 0.05 }): Promise<LmText> {
  if (!existsSync(path)) throw new Error(`${path}: language-model corpus not found`);
  let lines: Record<LmSplit, string[]>;
  if (statSync(path).isFile()) {
    const all = await readLines(path);
    const nValid = Math.max(1, Math.round(all.length * split.valid));
    const nTest = Math.max(1, Math.round(all.length * split.test));
    if (all.length < nValid + nTest + 1)
      throw new Error(`${path}: ${all.length} non-empty lines, too few to split into train, valid and test`);
    const trainEnd = all.length - nValid - nTest;
    lines = {
      train: all.slice(0, trainEnd),
      valid: all.slice(trainEnd, trainEnd + nValid),
      test: all.slice(trainEnd + nValid),
    };
  } else {
    const entries = await Promise.all(
      LM_SPLITS.map(async (s) => {
        const file = SPLIT_FILES[s].map((n) => join(path, n)).find((p) => existsSync(p));
        if (!file) throw new Error(`${path}: no ${s} file (looked for ${SPLIT_FILES[s].join(', ')})`);
        return [s, await readLines(file)] as const;
      }),
    );
    lines = Object.fromEntries(entries) as Record<LmSplit, string[]>;
  }
  for (const s of LM_SPLITS) if (lines[s].length === 0) throw new Error(`${path}: the ${s} split is empty`);
  return { name: path, lines };
}

/**
 * The default corpus when none is given: the English side of Multi30k (train/val/test2016) and the
 * Flickr8k captions (Karpathy's train/val/test), from FROST_DATA.
 * @throws Error saying what is missing when the shared data is not there
 */
export async function readDefaultLmText(env: NodeJS.ProcessEnv = process.env): Promise<LmText> {
  const m30k = multi30kDir(env);
  const read = (file: string) => readGzipLines(join(m30k, file));
  const [train, valid, test] = await Promise.all([
    read('train.en.gz'),
    read('val.en.gz'),
    read('test_2016_flickr.en.gz'),
  ]);
  const root = resolveDataRoot(env);
  const flickrDir = root ? join(root, 'flickr8k') : null;
  if (!flickrDir || !existsSync(flickrDir))
    throw new Error(`the default language-model corpus needs Flickr8k under FROST_DATA (looked for ${flickrDir})`);
  const flickr = await loadCaptionDataset(flickrDir);
  const captions = (split: 'train' | 'val' | 'test') => imagesOf(flickr, [split]).flatMap((im) => im.captions);
  return {
    name: `multi30k en + ${flickr.name}`,
    lines: {
      train: [...train, ...captions('train')],
      valid: [...valid, ...captions('val')],
      test: [...test, ...captions('test')],
    },
  };
}
