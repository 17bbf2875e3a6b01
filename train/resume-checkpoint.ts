import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loadCheckpoint, type LoadedCheckpoint } from './checkpoint.ts';
import { RUN_FILES } from './run-config.ts';
import { tempSiblingOf } from '../core/temp-sibling.ts';

/**
 * Which checkpoint `frost train --resume` starts from, and what interrupted saves left. A save
 * (train/atomic-write.ts `replaceDir`) writes `NAME.tmp-PID` and swaps it in by way of `NAME.old-PID`;
 * a process killed at the wrong moment leaves the newest complete checkpoint under one of those names,
 * and none under `NAME`. The resume takes the newest complete one whatever its name, puts it back under
 * its own name, and removes the rest, so a kill never silently sends a run back to step 0.
 */

/** A checkpoint a resume starts from, and where it was found (relative to the run folder). */
export interface ResumeCheckpoint extends LoadedCheckpoint {
  /** `checkpoints/last`, or the temporary name it was recovered from (`checkpoints/last.old-4242`). */
  from: string;
  /** What was cleaned up: leftovers of interrupted saves removed, relative to the run folder. */
  removed: string[];
}

/** The checkpoints a resume may start from: they hold Adam's moments (epoch checkpoints hold parameters only). */
const RESUMABLE = [RUN_FILES.last, RUN_FILES.best].map((p) => p.split('/').at(-1)!);

interface Candidate {
  /** Where it is now: under its own name once {@link resumeCheckpoint} has tidied the folder. */
  dir: string;
  /** Where it was found. */
  from: string;
  /** The name it belongs under: `last` for `last.old-4242`. */
  base: string;
  step: number;
}

/** The manifest's step when the folder holds a whole checkpoint (manifest read, tensors.bin of its size); else null. */
function completeStep(dir: string): number | null {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, 'checkpoint.json'), 'utf8')) as {
      bytes?: number;
      state?: { step?: number };
    };
    if (statSync(join(dir, 'tensors.bin')).size !== manifest.bytes) return null;
    return Number(manifest.state?.step ?? 0);
  } catch {
    return null;
  }
}

/**
 * Whether `runDir` holds a checkpoint {@link resumeCheckpoint} would start from: a whole `last` or `best`, under its
 * own name or a temporary one. Reads only; a save killed half-way (a torn `last.tmp-PID`) does not count.
 */
export function holdsResumableCheckpoint(runDir: string): boolean {
  return RESUMABLE.some((base) => newestWholeSave(runDir, base) !== null);
}

/**
 * The newest whole save of checkpoint `base` (`best`, `last`) among its own folder and the temporary ones an
 * interrupted save left (`best.old-4242`), as {@link resumeCheckpoint} would choose it but without tidying anything
 * (an export reads a folder a trainer may be writing); null when none is whole.
 */
export function newestWholeSave(runDir: string, base: string): string | null {
  const root = join(runDir, RUN_FILES.checkpoints);
  const complete: Candidate[] = [];
  for (const name of existsSync(root) ? readdirSync(root) : []) {
    if ((tempSiblingOf(name)?.base ?? name) !== base) continue;
    const step = completeStep(join(root, name));
    if (step !== null) complete.push({ dir: join(root, name), from: join(root, name), base, step });
  }
  return complete.length === 0 ? null : newestOf(complete, join(root, base)).dir;
}

/** The newest of a name's complete checkpoints; on a tie, the one already under its name (`target`). */
function newestOf(complete: Candidate[], target: string): Candidate {
  return complete.reduce((a, b) => (b.step > a.step || (b.step === a.step && b.dir === target) ? b : a));
}

/**
 * Puts the newest complete one of a name's checkpoints (`last`, `last.old-4242`, `last.tmp-4242`) under
 * the name and removes the others; returns it, or null when none is complete.
 */
function tidyGroup(root: string, base: string, dirs: string[], removed: string[]): Candidate | null {
  const target = join(root, base);
  const complete: Candidate[] = [];
  for (const dir of dirs) {
    const step = completeStep(dir);
    if (step !== null) complete.push({ dir, from: dir, base, step });
    else if (dir !== target) {
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    }
  }
  if (complete.length === 0) return null;
  const newest = newestOf(complete, target);
  for (const c of complete) {
    if (c === newest || c.dir === target) continue;
    rmSync(c.dir, { recursive: true, force: true });
    removed.push(c.dir);
  }
  if (newest.dir !== target) {
    if (existsSync(target)) removed.push(target);
    rmSync(target, { recursive: true, force: true });
    renameSync(newest.dir, target);
  }
  return { ...newest, dir: target };
}

/**
 * Tidies `runDir/checkpoints` after interrupted saves and loads the newest complete checkpoint that
 * holds Adam's moments (`last` or `best`, under its own name or a temporary one). In each group of a
 * name and its temporaries the newest complete one ends under the name and the rest are removed.
 * @throws Error naming the run folder when it holds no complete checkpoint: a resume never starts from zero
 */
export async function resumeCheckpoint(runDir: string): Promise<ResumeCheckpoint> {
  const root = join(runDir, RUN_FILES.checkpoints);
  const groups = new Map<string, string[]>();
  for (const name of existsSync(root) ? readdirSync(root) : []) {
    const base = tempSiblingOf(name)?.base ?? name;
    groups.set(base, [...(groups.get(base) ?? []), join(root, name)]);
  }
  const removed: string[] = [];
  const kept: Candidate[] = [];
  for (const [base, dirs] of groups) {
    // An epoch checkpoint with no temporaries beside it is left unread.
    if (!RESUMABLE.includes(base) && dirs.length === 1 && dirs[0] === join(root, base)) continue;
    const c = tidyGroup(root, base, dirs, removed);
    if (c && RESUMABLE.includes(base)) kept.push(c);
  }
  // Newest first; `last` before `best` at the same step (they then hold the same state).
  kept.sort((a, b) => b.step - a.step || RESUMABLE.indexOf(a.base) - RESUMABLE.indexOf(b.base));
  // A checkpoint of the right size whose checksum fails is corrupt, not half-saved: refused with its path
  // (checkpoint.ts says which file), never passed over for an older one.
  const newest = kept[0];
  if (newest) {
    const checkpoint = await loadCheckpoint(newest.dir);
    return { ...checkpoint, from: relative(runDir, newest.from), removed: removed.map((p) => relative(runDir, p)) };
  }
  throw new Error(
    `${runDir} holds no complete checkpoint to resume from (none was saved before the run stopped); --resume does not start a run again from zero: remove the folder and start the run anew`,
  );
}
