import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  isMulti30kLang,
  MULTI30K_LANGS,
  type Multi30kSplit,
  multi30kFileName,
  readMulti30k,
  splitLines,
} from './multi30k.ts';

/** One aligned sentence pair of raw text. */
export interface Pair {
  src: string;
  tgt: string;
}

/** The three splits every corpus frost trains on is cut into. */
export interface ParallelCorpus {
  train: Pair[];
  val: Pair[];
  test: Pair[];
}

/**
 * - `multi30k`: Multi30k task-1 files, `train.<lang>.gz`, `val.<lang>.gz`, `test_2016_flickr.<lang>.gz`.
 * - `plain`: uncompressed text, one sentence per line, `<split>.<lang>` for split train/val/test;
 *   `frost data toy` writes this layout with the languages `src` and `tgt`.
 */
export type CorpusKind = 'multi30k' | 'plain';

export const PLAIN_SPLITS = ['train', 'val', 'test'] as const;

/** Default language pair of each kind: Multi30k's classic en→de, and the toy corpus's file suffixes. */
export const DEFAULT_LANGS: Readonly<Record<CorpusKind, { src: string; tgt: string }>> = {
  multi30k: { src: 'en', tgt: 'de' },
  plain: { src: 'src', tgt: 'tgt' },
};

/**
 * Tells the layout from the directory's contents: Multi30k when `train.en.gz` is there, plain when
 * some `train.*` file without `.gz` is.
 * @throws Error naming the directory when it is missing or holds neither layout
 */
export function detectCorpusKind(dataDir: string): CorpusKind {
  if (!existsSync(dataDir)) throw new Error(`${dataDir}: corpus directory not found`);
  const names = readdirSync(dataDir);
  if (names.includes(multi30kFileName('train', 'en'))) return 'multi30k';
  if (names.some((n) => n.startsWith('train.') && !n.endsWith('.gz') && n !== 'train.')) return 'plain';
  throw new Error(
    `${dataDir}: not a corpus directory (expected Multi30k's train.en.gz or plain train.<lang> files; ` +
      'see `frost data multi30k` and `frost data toy`)',
  );
}

/**
 * Reads one plain-text file's lines.
 * @throws Error naming the path when it is missing or unreadable
 */
async function readTextLines(path: string): Promise<string[]> {
  try {
    return splitLines(await readFile(path, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`${path}: ${code === 'ENOENT' ? 'file not found' : (err as Error).message}`, { cause: err });
  }
}

async function readPlainSplit(dataDir: string, split: string, src: string, tgt: string): Promise<Pair[]> {
  const srcPath = join(dataDir, `${split}.${src}`);
  const tgtPath = join(dataDir, `${split}.${tgt}`);
  // Sequential reads keep the error deterministic when both files are bad.
  const srcLines = await readTextLines(srcPath);
  const tgtLines = await readTextLines(tgtPath);
  if (srcLines.length !== tgtLines.length) {
    throw new Error(
      `${split} is misaligned: ${srcPath} has ${srcLines.length} lines, ${tgtPath} has ${tgtLines.length}`,
    );
  }
  return srcLines.map((line, i) => ({ src: line, tgt: tgtLines[i] }));
}

export interface LoadParallelCorpusOptions {
  dataDir: string;
  /** Source language (file suffix). @default 'en' for multi30k, 'src' for plain */
  src?: string;
  /** Target language (file suffix). @default 'de' for multi30k, 'tgt' for plain */
  tgt?: string;
  /** @default detected from the directory, see {@link detectCorpusKind} */
  kind?: CorpusKind;
}

/**
 * The one way training code gets data: raw (untokenised) sentence pairs of the train, val and test
 * splits. For Multi30k, `test` is test_2016_flickr.
 * @throws Error naming the file that is missing, corrupt or misaligned
 */
export async function loadParallelCorpus(options: LoadParallelCorpusOptions): Promise<ParallelCorpus> {
  const { dataDir } = options;
  const kind = options.kind ?? detectCorpusKind(dataDir);
  const src = options.src ?? DEFAULT_LANGS[kind].src;
  const tgt = options.tgt ?? DEFAULT_LANGS[kind].tgt;
  if (src === tgt) throw new Error(`source and target language are both '${src}'`);
  if (kind === 'multi30k') {
    if (!isMulti30kLang(src) || !isMulti30kLang(tgt)) {
      throw new Error(
        `Multi30k has no language '${isMulti30kLang(src) ? tgt : src}' (have ${MULTI30K_LANGS.join(', ')})`,
      );
    }
    const read = (split: Multi30kSplit) => readMulti30k({ dir: dataDir, split, src, tgt });
    return { train: await read('train'), val: await read('val'), test: await read('test2016') };
  }
  const read = (split: (typeof PLAIN_SPLITS)[number]) => readPlainSplit(dataDir, split, src, tgt);
  return { train: await read('train'), val: await read('val'), test: await read('test') };
}
