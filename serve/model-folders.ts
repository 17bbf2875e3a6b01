/**
 * Finding the model folders under `--models`: one finder for every kind of model, so a link is followed
 * the same way whatever the folder holds.
 */
import { existsSync } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';

/**
 * `dir` itself when it is a model directory, else its subdirectories that are, sorted. Links are
 * followed (`models/en-de -> /srv/models/en-de/v3`, `models/current -> v3`: how versioned
 * deployments are laid out); two entries that are the same folder are loaded once, under the name
 * of the link.
 */
export async function findModelDirs(dir: string): Promise<string[]> {
  let info;
  try {
    info = await stat(dir);
  } catch {
    throw new Error(`${dir}: models directory not found`);
  }
  if (!info.isDirectory())
    throw new Error(`${dir}: not a directory (--models takes a model directory or a directory of them)`);
  if (existsSync(join(dir, MODEL_CARD_FILE))) return [dir];
  const entries = await readdir(dir, { withFileTypes: true });
  const candidates = entries
    .filter((e) => (e.isDirectory() || e.isSymbolicLink()) && existsSync(join(dir, e.name, MODEL_CARD_FILE)))
    .map((e) => ({ path: join(dir, e.name), link: e.isSymbolicLink() }))
    .sort((a, b) => Number(b.link) - Number(a.link) || a.path.localeCompare(b.path));
  const byRealPath = new Map<string, string>();
  for (const c of candidates) {
    const real = await realpath(c.path);
    if (!byRealPath.has(real)) byRealPath.set(real, c.path);
  }
  const dirs = [...byRealPath.values()].sort();
  if (dirs.length === 0) {
    throw new Error(`${dir}: no model found (expected ${MODEL_CARD_FILE} in it or in its subdirectories)`);
  }
  return dirs;
}
