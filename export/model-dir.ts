import { existsSync, lstatSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, extname, join, resolve } from 'node:path';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import { recoverSwap } from '../core/interrupted-swap.ts';
import { replaceDir, writeDurable, writeFileAtomic } from '../train/atomic-write.ts';

/**
 * Writes an exported model's folder (`frost export --out`) whole, or not at all (issue #39): every file
 * goes into a temporary sibling (`NAME.tmp-PID`), fsynced, and the folder is swapped in for the old one
 * (train/atomic-write.ts). A kill or a full disk during the export leaves the previous model serving;
 * `frost serve --watch` sees the swap as one change (its debounce spans the two renames). What an
 * interrupted export left (a temporary folder; both versions when the kill fell between the two renames)
 * is cleaned up, or its swap finished, by the next export to the same folder or the next `frost serve`
 * (core/interrupted-swap.ts); what a running export is writing is left alone.
 */

/** What a model folder may hold before it is replaced: its card, graphs, vocabularies and subword models. */
const MODEL_FILE = new Set(['.onnx', '.json', '.model']);

/**
 * Replaces `outDir` (a link is followed: `models/current -> v3` replaces v3) with exactly `files`, the
 * card among them.
 * @returns the cleanup done first (leftovers of an interrupted export), for a log line
 * @throws Error when `outDir` holds something other than a model (it would be replaced whole)
 * @throws WriteFailed naming the file that failed; the previous model is left as it was
 */
export async function writeModelDir(outDir: string, files: Record<string, string | Uint8Array>): Promise<string[]> {
  // The link's own target, even when a kill left it dangling (its folder in `v3.old-PID`).
  const target = lstatSync(outDir, { throwIfNoEntry: false })?.isSymbolicLink()
    ? resolve(dirname(outDir), readlinkSync(outDir))
    : outDir;
  const recovered = recoverSwap(target);
  if (existsSync(target)) checkReplaceable(target, outDir);
  await mkdir(dirname(target), { recursive: true });
  if (isMountPoint(target)) return [...recovered, ...(await replaceFilesIn(target, files))];
  await replaceDir(target, async (dir) => {
    for (const [file, bytes] of Object.entries(files)) {
      if (file !== MODEL_CARD_FILE) await writeDurable(join(dir, file), bytes);
    }
    // The card last: a folder with a card is a whole model.
    const card = files[MODEL_CARD_FILE];
    if (card !== undefined) await writeDurable(join(dir, MODEL_CARD_FILE), card);
  });
  return recovered;
}

/** Whether `dir` is a mount point (a container's volume): it cannot be renamed, so it cannot be swapped whole. */
function isMountPoint(dir: string): boolean {
  const here = statSync(dir, { throwIfNoEntry: false });
  const parent = statSync(dirname(resolve(dir)), { throwIfNoEntry: false });
  return here !== undefined && parent !== undefined && here.dev !== parent.dev;
}

/**
 * A model written into a mount point, which cannot be renamed: each file replaced atomically in place (a temporary
 * sibling inside the mount, renamed over), the card last, then the previous model's other files removed. A server
 * reloading in between sees a card whose recorded sizes its graphs do not all have yet, refuses that version and
 * keeps the previous one, until the card arrives.
 * @returns a line saying so, for the log
 */
async function replaceFilesIn(dir: string, files: Record<string, string | Uint8Array>): Promise<string[]> {
  const names = Object.keys(files).filter((f) => f !== MODEL_CARD_FILE);
  for (const file of names) await writeFileAtomic(join(dir, file), files[file]!);
  const card = files[MODEL_CARD_FILE];
  if (card !== undefined) await writeFileAtomic(join(dir, MODEL_CARD_FILE), card);
  const kept = new Set(Object.keys(files));
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isFile() && !kept.has(e.name) && MODEL_FILE.has(extname(e.name))) rmSync(join(dir, e.name));
  return [`${dir} is a mount point, which cannot be swapped whole: its files were replaced one by one, the card last`];
}

/** Refuses to replace a folder that is not a model folder: `--out .` must not delete the working directory. */
function checkReplaceable(dir: string, asGiven: string): void {
  const entries = readdirSync(dir, { withFileTypes: true });
  if (entries.some((e) => e.name === MODEL_CARD_FILE)) return;
  const other = entries.find((e) => !e.isFile() || !MODEL_FILE.has(extname(e.name)));
  if (other) {
    throw new Error(
      `${asGiven} holds ${other.name}, which is not part of an exported model; the export replaces --out whole, so give a new or empty folder, or a model folder`,
    );
  }
}
