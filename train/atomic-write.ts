import { existsSync, fsyncSync, openSync, closeSync, renameSync } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

/**
 * Writes that survive kill -9, a power cut and a full disk (issue #39): checkpoints (train/), exported
 * models (export/) and reports (report/). A file or folder is written under a temporary sibling name,
 * fsynced, and renamed over the old one, so a reader sees the old version or the new one, never a part.
 * An I/O error names the path that failed and says what was left, and the partial temporary is removed
 * (on a full disk it is what keeps the disk full).
 *
 * A folder cannot be renamed over a non-empty folder, so {@link replaceDir} swaps in two renames,
 * back to back: `target` → `target.old-PID`, `target.tmp-PID` → `target`. A process killed between
 * them leaves both versions whole; core/interrupted-swap.ts finishes the swap at the next start.
 * Node-only; the lowest layer that saves a model (train/), so export/ and report/ import it from here.
 */

/** A write that failed: the message names the path and what the failure left on disk. */
export class WriteFailed extends Error {
  /** The errno code of the cause (`ENOSPC`, `EACCES`, ...), when it has one. */
  readonly code: string | undefined;

  constructor(
    readonly path: string,
    left: string,
    cause: unknown,
  ) {
    super(`cannot write ${path}: ${(cause as Error)?.message ?? String(cause)}; ${left}`, { cause });
    this.name = 'WriteFailed';
    this.code = (cause as NodeJS.ErrnoException)?.code;
  }
}

/** Where `target` is written before it is renamed over: a sibling, so the rename stays on one filesystem. */
export const tmpSibling = (target: string) => `${target}.tmp-${process.pid}`;
const oldSibling = (target: string) => `${target}.old-${process.pid}`;

/**
 * Test hook (`FROST_TEST_KILL_AT=point:name:n`): SIGKILL this process at the n-th time it reaches `point`
 * for a file or folder named `name`, as `kill -9` would at that moment. `file`: after that file is
 * written and fsynced in its temporary place; `swap`: between the two renames of a folder swap.
 */
function killPoint(point: 'file' | 'swap', path: string): void {
  const at = process.env.FROST_TEST_KILL_AT;
  if (!at) return;
  const [p, name, n] = at.split(':');
  if (p !== point || name !== basename(path)) return;
  const seen = (killCounts.get(at) ?? 0) + 1;
  killCounts.set(at, seen);
  if (seen === Number(n)) process.kill(process.pid, 'SIGKILL');
}
const killCounts = new Map<string, number>();

/** Writes `data` to `path` and fsyncs it; no rename (for files inside a folder that {@link replaceDir} swaps in). */
export async function writeDurable(path: string, data: string | Uint8Array): Promise<void> {
  try {
    const file = await open(path, 'w');
    try {
      await file.writeFile(data);
      await file.sync();
    } finally {
      await file.close();
    }
  } catch (err) {
    // A failed write(2) names no file (`ENOSPC: no space left on device, write`): say which one.
    const e = err as NodeJS.ErrnoException;
    e.path ??= path;
    throw e;
  }
  killPoint('file', path);
}

/** fsyncs a folder, so the names created or renamed in it are on disk too. */
export function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Replaces the file `path` with `data` atomically and durably: a reader, or the next start after a
 * crash, finds the old content or the new, whole.
 * @throws WriteFailed naming `path`; the temporary file is removed and `path` is left as it was
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = tmpSibling(path);
  try {
    await writeDurable(tmp, data);
    renameSync(tmp, path);
    syncDir(dirname(path));
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw new WriteFailed(path, `${path} is unchanged and no temporary file was left`, err);
  }
}

/**
 * Replaces the folder `target` with one `fill` writes (into the empty folder it is handed, with
 * {@link writeDurable}), atomically and durably: the folder is written under `target.tmp-PID`,
 * fsynced, and swapped in (two renames, back to back, with nothing in between that yields to a
 * signal handler). A `target` that exists is replaced whole.
 * @throws WriteFailed naming the path that failed; the temporary folder is removed and `target` is left as it was
 */
export async function replaceDir(target: string, fill: (dir: string) => Promise<void>): Promise<void> {
  const tmp = tmpSibling(target);
  const old = oldSibling(target);
  await rm(tmp, { recursive: true, force: true });
  try {
    await mkdir(dirname(tmp), { recursive: true });
    // Not recursive: a recursive mkdir on a read-only file system reports ENOENT, which names the wrong problem.
    await mkdir(tmp);
    await fill(tmp);
    syncDir(tmp);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    if (err instanceof WriteFailed) throw err;
    const path = (err as NodeJS.ErrnoException).path ?? tmp;
    throw new WriteFailed(path, `${target} is unchanged and ${tmp} was removed`, err);
  }
  await rm(old, { recursive: true, force: true });
  const had = existsSync(target);
  try {
    // Synchronous: a signal's handler (train/interrupt.ts) runs between event-loop turns, never between these.
    if (had) renameSync(target, old);
    if (had) killPoint('swap', target);
    renameSync(tmp, target);
    syncDir(dirname(target));
  } catch (err) {
    if (had && !existsSync(target) && existsSync(old)) renameSync(old, target);
    throw new WriteFailed(target, `${target} is the previous version; the new one is in ${tmp}`, err);
  }
  await rm(old, { recursive: true, force: true });
}
