import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, found from this file's location so it holds for any working directory. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The shared data directory beside the checkout (`<repo>/../shared/data`): where a team keeps one
 * read-only copy of the datasets instead of one per clone.
 */
export const SHARED_DATA_DIR = resolve(REPO_ROOT, '..', 'shared', 'data');

/** Where `frost data multi30k` puts its files unless told otherwise (git-ignored). */
export const LOCAL_MULTI30K_DIR = join(REPO_ROOT, 'data', 'multi30k');

function isDir(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/**
 * The root that holds the datasets (`multi30k/`, ...): `FROST_DATA` when set, else
 * `<repo>/../shared/data` when it exists, else null.
 * @param env the environment to read; a parameter so tests need not touch `process.env`
 */
export function resolveDataRoot(env: NodeJS.ProcessEnv = process.env): string | null {
  const fromEnv = env.FROST_DATA?.trim();
  if (fromEnv) return resolve(fromEnv);
  return isDir(SHARED_DATA_DIR) ? SHARED_DATA_DIR : null;
}

/**
 * The Multi30k task-1 directory (the `*.gz` files).
 *
 * Looks in `<data root>/multi30k` (see {@link resolveDataRoot}) and then in `<repo>/data/multi30k`,
 * which is where the fix suggested by the error message puts the files.
 * @throws Error that lists the places it looked and says how to get the data
 */
export function multi30kDir(env: NodeJS.ProcessEnv = process.env): string {
  const root = resolveDataRoot(env);
  const candidates = [...(root ? [join(root, 'multi30k')] : []), LOCAL_MULTI30K_DIR];
  for (const dir of candidates) if (isDir(dir)) return dir;
  const why = env.FROST_DATA?.trim()
    ? `FROST_DATA=${env.FROST_DATA} has no multi30k/ directory`
    : `FROST_DATA is not set and ${SHARED_DATA_DIR} does not exist`;
  throw new Error(
    `Multi30k data not found (${why}; looked in ${candidates.join(', ')}). ` +
      'Set FROST_DATA=/path/to/data (the directory that holds multi30k/) ' +
      'or run `frost data multi30k --out data/multi30k`.',
  );
}
