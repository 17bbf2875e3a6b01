import { existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { processRuns } from './process-state.ts';
import { tempSiblingOf } from './temp-sibling.ts';

/**
 * What a folder swap killed part-way leaves, and putting it right (Node-only). A swap (train/atomic-write.ts
 * `replaceDir`) writes the new version whole under `NAME.tmp-PID`, then renames `NAME` to `NAME.old-PID` and
 * `NAME.tmp-PID` to `NAME`, back to back. Every writer of such folders (an export's next start, `frost serve`'s
 * start) recovers through {@link recoverSwap}, so that a kill anywhere leaves a folder that the next reader serves
 * and that says what it did. Leftovers of a process that still runs are its work in progress, never touched.
 */

/** A temporary sibling of a swapped folder: where it is, which kind, and the pid that wrote it. */
export interface Leftover {
  path: string;
  kind: 'tmp' | 'old';
  pid: number;
}

/** The temporary siblings of `target` (`NAME.tmp-PID`, `NAME.old-PID`), whatever process wrote them, sorted. */
export function leftoversOf(target: string): Leftover[] {
  const name = basename(target);
  let names: string[];
  try {
    names = readdirSync(dirname(target));
  } catch {
    return []; // a parent gone or unreadable shows no leftovers; writing into it says what is wrong
  }
  return names.sort().flatMap((n) => {
    const sibling = tempSiblingOf(n);
    return sibling?.base === name ? [{ path: join(dirname(target), n), kind: sibling.kind, pid: sibling.pid }] : [];
  });
}

/**
 * Whether `pid` is a process running on this machine, other than this one: its leftovers are then a write in
 * progress. (A pid of another machine sharing the folder cannot be seen from here.)
 */
export function writerRuns(pid: number): boolean {
  return pid !== process.pid && processRuns(pid);
}

/**
 * Finishes or rolls back what interrupted swaps of `target` left, and removes the rest of their leftovers:
 * - `target` missing, with `NAME.old-PID` and `NAME.tmp-PID` of one dead pid (killed between the two renames):
 *   the new version was whole before the first rename, so the swap is finished (`tmp` in, `old` removed);
 * - `target` missing with only an `old`: rolled back (`old` back under the name);
 * - any other leftover of a dead pid (a partial or unswapped `tmp`, an `old` already replaced): removed.
 * Leftovers of a pid that still runs are left alone (another export to the same folder, part-way).
 * @returns one line per thing done, for a log; empty when there was nothing to do
 * @throws Error from a rename or removal the folder's permissions refuse, naming the path
 */
export function recoverSwap(target: string): string[] {
  const done: string[] = [];
  const leftovers: Leftover[] = [];
  for (const l of leftoversOf(target)) {
    if (writerRuns(l.pid)) done.push(`left ${l.path} alone: pid ${l.pid}, which is writing it, still runs`);
    else leftovers.push(l);
  }
  let moved: Leftover | undefined;
  if (!existsSync(target)) {
    const olds = leftovers.filter((l) => l.kind === 'old');
    const finishable = olds.flatMap((o) => leftovers.filter((t) => t.kind === 'tmp' && t.pid === o.pid)).at(-1);
    moved = finishable ?? olds.at(-1);
    if (moved) {
      renameSync(moved.path, target);
      done.push(
        moved.kind === 'tmp'
          ? `finished the interrupted swap of ${target}: moved in the new version from ${basename(moved.path)}`
          : `rolled back the interrupted swap of ${target}: restored the previous version from ${basename(moved.path)}`,
      );
    }
  }
  for (const l of leftovers) {
    if (l === moved) continue;
    rmSync(l.path, { recursive: true, force: true });
    done.push(`removed ${l.path}, left by an interrupted write`);
  }
  return done;
}

/** The names in `dir` that interrupted swaps left leftovers for: what {@link recoverSwap} is run on. */
export function swappedNames(dir: string): string[] {
  const names = new Set<string>();
  for (const n of existsSync(dir) ? readdirSync(dir) : []) {
    const base = tempSiblingOf(n)?.base;
    if (base !== undefined) names.add(base);
  }
  return [...names].sort();
}
