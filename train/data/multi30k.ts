import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { Pair } from './corpus.ts';

const gunzipAsync = promisify(gunzip);

/** Languages of Multi30k task 1: en is the original, the others are its translations. */
export const MULTI30K_LANGS = ['en', 'de', 'fr', 'cs'] as const;
export type Multi30kLang = (typeof MULTI30K_LANGS)[number];

export const MULTI30K_SPLITS = ['train', 'val', 'test2016'] as const;
export type Multi30kSplit = (typeof MULTI30K_SPLITS)[number];

/** File-name stem of each split, as in the official repository's `data/task1/raw/`. */
const MULTI30K_FILE_STEMS: Readonly<Record<Multi30kSplit, string>> = {
  train: 'train',
  val: 'val',
  test2016: 'test_2016_flickr',
};

/** Lines per file of each split (every language has the same count); used to verify copies and downloads. */
const MULTI30K_LINE_COUNTS: Readonly<Record<Multi30kSplit, number>> = {
  train: 29000,
  val: 1014,
  test2016: 1000,
};

/** `train.de.gz`, `test_2016_flickr.en.gz`, ... */
export function multi30kFileName(split: Multi30kSplit, lang: Multi30kLang): string {
  return `${MULTI30K_FILE_STEMS[split]}.${lang}.gz`;
}

/** Every task-1 file frost uses (3 splits x 4 languages), each with its expected line count. */
export function multi30kFiles(): { split: Multi30kSplit; lang: Multi30kLang; file: string; lines: number }[] {
  return MULTI30K_SPLITS.flatMap((split) =>
    MULTI30K_LANGS.map((lang) => ({
      split,
      lang,
      file: multi30kFileName(split, lang),
      lines: MULTI30K_LINE_COUNTS[split],
    })),
  );
}

export function isMulti30kLang(lang: string): lang is Multi30kLang {
  return (MULTI30K_LANGS as readonly string[]).includes(lang);
}

/**
 * Splits text into lines. A final newline ends the last line rather than starting an empty one,
 * and a stray `\r` is dropped so a file that went through Windows still aligns.
 */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
}

/**
 * Decompresses gzip bytes and splits them into lines.
 * @param label names the bytes (a path or URL) in the error when they are not valid gzip
 */
export async function gunzipLines(bytes: Uint8Array, label: string): Promise<string[]> {
  let text: string;
  try {
    text = (await gunzipAsync(bytes)).toString('utf8');
  } catch (err) {
    throw new Error(`${label}: not a valid gzip file (${(err as Error).message})`, { cause: err });
  }
  return splitLines(text);
}

/**
 * Reads the lines of a `.gz` text file.
 * @throws Error naming the path when the file is missing, unreadable or not gzip
 */
export async function readGzipLines(path: string): Promise<string[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const what = code === 'ENOENT' ? 'file not found' : (err as Error).message;
    throw new Error(`${path}: ${what}`, { cause: err });
  }
  return gunzipLines(bytes, path);
}

export interface ReadMulti30kOptions {
  /** The directory with the `.gz` files (see `multi30kDir()` in paths.ts). */
  dir: string;
  split: Multi30kSplit;
  src: Multi30kLang;
  tgt: Multi30kLang;
}

/**
 * Reads one split of Multi30k task 1 as aligned (src, tgt) pairs of raw text (original casing and
 * punctuation; tokenisation is the caller's business).
 * @throws Error naming the file when it is missing or corrupt, or both files when their line counts differ
 */
export async function readMulti30k({ dir, split, src, tgt }: ReadMulti30kOptions): Promise<Pair[]> {
  for (const lang of [src, tgt]) {
    if (!isMulti30kLang(lang))
      throw new Error(`Multi30k has no language '${lang}' (have ${MULTI30K_LANGS.join(', ')})`);
  }
  const srcPath = join(dir, multi30kFileName(split, src));
  const tgtPath = join(dir, multi30kFileName(split, tgt));
  // One after the other, so that when both files are bad the error always names the source file.
  const srcLines = await readGzipLines(srcPath);
  const tgtLines = await readGzipLines(tgtPath);
  if (srcLines.length !== tgtLines.length) {
    throw new Error(
      `Multi30k ${split} is misaligned: ${srcPath} has ${srcLines.length} lines, ${tgtPath} has ${tgtLines.length}`,
    );
  }
  return srcLines.map((line, i) => ({ src: line, tgt: tgtLines[i] }));
}
