import { existsSync, statSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PLAIN_SPLITS } from './corpus.ts';
import { gunzipLines, multi30kFiles } from './multi30k.ts';
import { resolveDataRoot } from './paths.ts';
import { describeToyCorpus, makeToyCorpus, type ToyCorpusOptions } from './toy-corpus.ts';

/** The official Multi30k repository's task-1 raw files. */
export const MULTI30K_BASE_URL = 'https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/';

export interface FetchMulti30kOptions {
  /** Directory to write the `.gz` files to; created if needed. */
  out: string;
  /**
   * Directory to copy from. @default `<data root>/multi30k` (FROST_DATA or ../shared/data) when it
   * exists; otherwise the files are downloaded
   */
  from?: string;
  /** Download even when a local copy exists. */
  download?: boolean;
  /** Injectable for tests; @default globalThis.fetch */
  fetchImpl?: typeof fetch;
  /** Progress lines. @default silent */
  log?: (line: string) => void;
}

export interface FetchMulti30kResult {
  method: 'copy' | 'download';
  /** The directory or base URL the files came from. */
  source: string;
  out: string;
  /** Each file with its verified line count; `kept` when a valid copy was already in `out`. */
  files: { file: string; lines: number; kept: boolean }[];
}

function isDir(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/** Counts the lines in gzip bytes and checks them against the data README's count. */
async function verifiedLineCount(bytes: Uint8Array, label: string, expected: number): Promise<number> {
  const n = (await gunzipLines(bytes, label)).length;
  if (n !== expected) throw new Error(`${label}: expected ${expected} lines, found ${n} (truncated or wrong file?)`);
  return n;
}

/**
 * Puts the Multi30k task-1 files (train, val, test_2016_flickr in en, de, fr, cs) into `out`:
 * copied from a local directory when there is one, else downloaded from the official repository.
 * Each file's line count is verified before it is written, and written under a temporary name
 * first, so `out` never holds a partial file; files already in `out` that verify are kept.
 * @throws Error naming the file or URL that is missing, unreachable or has the wrong line count
 */
export async function fetchMulti30k(options: FetchMulti30kOptions): Promise<FetchMulti30kResult> {
  const log = options.log ?? (() => {});
  const out = resolve(options.out);
  let fromDir: string | null = null;
  if (options.from !== undefined) {
    if (!isDir(options.from)) throw new Error(`${options.from}: directory not found`);
    fromDir = resolve(options.from);
  } else if (!options.download) {
    const root = resolveDataRoot();
    if (root && isDir(join(root, 'multi30k'))) fromDir = join(root, 'multi30k');
  }
  const method = fromDir ? 'copy' : 'download';
  const source = fromDir ?? MULTI30K_BASE_URL;
  const fetchImpl = options.fetchImpl ?? globalThis.fetch;

  const get = async (file: string): Promise<{ bytes: Uint8Array; label: string }> => {
    if (fromDir) {
      const path = join(fromDir, file);
      try {
        return { bytes: await readFile(path), label: path };
      } catch (err) {
        throw new Error(
          `${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (err as Error).message}`,
          { cause: err },
        );
      }
    }
    const url = MULTI30K_BASE_URL + file;
    let res: Response;
    try {
      res = await fetchImpl(url);
    } catch (err) {
      throw new Error(
        `${url}: download failed (${(err as Error).message}); without internet, set FROST_DATA or use --from`,
        { cause: err },
      );
    }
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${res.statusText}`);
    return { bytes: new Uint8Array(await res.arrayBuffer()), label: url };
  };

  await mkdir(out, { recursive: true });
  log(`multi30k: ${method === 'copy' ? 'copying from' : 'downloading from'} ${source} to ${out}`);
  const files: FetchMulti30kResult['files'] = [];
  for (const { file, lines } of multi30kFiles()) {
    const dest = join(out, file);
    if (existsSync(dest)) {
      // A re-run (or an interrupted download) keeps what is already good instead of fetching it again.
      const ok = await verifiedLineCount(await readFile(dest), dest, lines).then(
        () => true,
        () => false,
      );
      if (ok) {
        files.push({ file, lines, kept: true });
        log(`  ${file}: ${lines} lines (already there)`);
        continue;
      }
    }
    const { bytes, label } = await get(file);
    await verifiedLineCount(bytes, label, lines);
    await writeFile(`${dest}.part`, bytes);
    await rename(`${dest}.part`, dest);
    files.push({ file, lines, kept: false });
    log(`  ${file}: ${lines} lines`);
  }
  return { method, source, out, files };
}

/**
 * Writes the toy corpus (see toy-corpus.ts) as plain text, the layout `loadParallelCorpus` reads as
 * 'plain': `train.src`, `train.tgt`, `val.*`, `test.*`, plus a README.md saying what it is.
 * @returns the paths written
 */
export async function writeToyCorpus(out: string, options: ToyCorpusOptions): Promise<string[]> {
  const corpus = makeToyCorpus(options);
  const dir = resolve(out);
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  const put = async (name: string, text: string) => {
    const path = join(dir, name);
    await writeFile(path, text);
    written.push(path);
  };
  for (const split of PLAIN_SPLITS) {
    const pairs = corpus[split];
    await put(`${split}.src`, pairs.map((p) => `${p.src}\n`).join(''));
    await put(`${split}.tgt`, pairs.map((p) => `${p.tgt}\n`).join(''));
  }
  await put('README.md', describeToyCorpus(options));
  return written;
}
