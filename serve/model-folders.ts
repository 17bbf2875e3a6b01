/**
 * Model folders under `--models`: finding them (one finder for every kind of model, so a link is
 * followed the same way whatever the folder holds) and reading one ({@link readModelFolder}: the one
 * place that looks at a folder before a runtime loads it).
 */
import { existsSync } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  type AnyCard,
  type CardKind,
  cardTextFamily,
  type ModelFamily,
  parseAnyCard,
} from '../core/runtime/card-kinds.ts';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import { readModelFile } from '../core/runtime/model-files.ts';
import { recoverSwap, swappedNames } from '../core/interrupted-swap.ts';
import { tempSiblingOf } from '../core/temp-sibling.ts';

/** A model folder whose card has been read and checked against its kind's schema. */
export interface ModelFolder {
  readonly dir: string;
  readonly card: AnyCard;
  readonly kind: CardKind;
}

/**
 * Reads `dir`'s card and checks it with the schema of the kind its task names.
 * @throws Error naming the card's path when it is missing, not JSON, of an unknown task, or not valid
 */
export async function readModelFolder(dir: string): Promise<ModelFolder> {
  const path = join(dir, MODEL_CARD_FILE);
  const { kind, card } = parseAnyCard(await readCardText(dir), path);
  return { dir, card, kind };
}

/**
 * The family of the model in `dir` as its card's task says, without checking the rest of the card;
 * undefined when the card cannot be read or names no known task (its loader then says what is wrong).
 */
export async function folderFamily(dir: string): Promise<ModelFamily | undefined> {
  const text = await readCardText(dir).catch(() => '');
  return cardTextFamily(text);
}

/** The card's text, read only once it is known to be a regular file inside `dir` and within its size limit. */
async function readCardText(dir: string): Promise<string> {
  return Buffer.from(await readModelFile(dir, MODEL_CARD_FILE, 'card')).toString('utf8');
}

/**
 * Whether an entry of a models folder may be a model folder by its name: not what a killed
 * `frost export --out NAME` leaves (`NAME.tmp-PID`, `NAME.old-PID`), which may hold a whole card.
 */
export function mayHoldModel(name: string): boolean {
  return tempSiblingOf(name) === null;
}

/** Puts right the interrupted swaps of the folders `names` in `parent`, logging each step and each failure. */
function recoverSwaps(parent: string, names: string[], log: (line: string) => void): void {
  for (const name of names) {
    const target = join(parent, name);
    try {
      for (const line of recoverSwap(target)) log(line);
    } catch (err) {
      log(
        `cannot put right the interrupted export of ${target} (${(err as Error).message}); run the export again, or move its ${name}.tmp-PID folder to ${name}`,
      );
    }
  }
}

/** Whether `dir` holds a model card (what makes a folder a model folder). */
export function hasModelCard(dir: string): boolean {
  return existsSync(join(dir, MODEL_CARD_FILE));
}

/**
 * `dir` itself when it is a model directory, else its subdirectories that are, sorted. Links are
 * followed (`models/en-de -> /srv/models/en-de/v3`, `models/current -> v3`: how versioned
 * deployments are laid out); two entries that are the same folder are loaded once, under the name
 * of the link. First, what an export killed part-way left is put right (core/interrupted-swap.ts), for
 * `dir` itself and for each folder in it, each step passed to `log`: a kill between the swap's two renames
 * must not leave a folder the server cannot start from. A swap that cannot be put right (a read-only
 * folder) is logged, and its folder is not served.
 */
export async function findModelDirs(dir: string, log: (line: string) => void = () => undefined): Promise<string[]> {
  recoverSwaps(dirname(dir), [basename(dir)], log);
  let info;
  try {
    info = await stat(dir);
  } catch {
    throw new Error(`${dir}: models directory not found`);
  }
  if (!info.isDirectory())
    throw new Error(`${dir}: not a directory (--models takes a model directory or a directory of them)`);
  if (hasModelCard(dir)) return [dir];
  recoverSwaps(dir, swappedNames(dir), log);
  const entries = await readdir(dir, { withFileTypes: true });
  const candidates = entries
    .filter((e) => mayHoldModel(e.name))
    .filter((e) => (e.isDirectory() || e.isSymbolicLink()) && hasModelCard(join(dir, e.name)))
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
