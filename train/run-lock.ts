import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { processRuns, processStat } from '../core/process-state.ts';
import { RUN_FILES } from './run-config.ts';
import { interruptWatchActive, signalExitStatus, STOP_SIGNALS, type StopSignal } from './interrupt.ts';

/**
 * One trainer per run folder. `frost train` (a new run or `--resume`) holds `<run>/train.lock` while it
 * runs: created exclusively (`wx`), holding the trainer's pid, host and start time, removed when it exits
 * (normally, on an error, or on a signal). A second trainer on the folder is refused, naming the holder,
 * instead of writing the same checkpoints and metrics. A lock whose process is gone (a trainer killed with
 * SIGKILL, a machine that rebooted) is taken over with a warning, so such a run still resumes; by one trainer only,
 * when several find it at once (`removeStaleLock`).
 *
 * Only trainers take it: export, report and `frost experiment` read run folders without looking at it.
 * It lives beside config.json, outside `checkpoints/`, and nothing copies a run folder whole.
 */

export interface RunLockHolder {
  pid: number;
  host: string;
  /** ISO time the lock was taken. */
  startedAt: string;
  /** Linux: the holder's start time in clock ticks since boot (/proc/PID/stat), to tell a reused pid. */
  procStart?: string;
  /** The holder's command line, for the refusal. */
  command: string;
}

/** A lock file that does not parse is a trainer between creating and writing it for this long, at most. */
const UNWRITTEN_GRACE_MS = 10_000;

/** The lock file of a run folder. */
export function runLockPath(runDir: string): string {
  return join(runDir, RUN_FILES.lock);
}

/**
 * Whether the lock's holder still runs: 'alive', 'dead', or 'unknown' when it is on another host (its
 * pid means nothing here). A pid now used by a process that started at another time counts as dead.
 */
export function holderState(holder: RunLockHolder): 'alive' | 'dead' | 'unknown' {
  if (holder.host !== hostname()) return 'unknown';
  if (!processRuns(holder.pid)) return 'dead';
  const now = processStat(holder.pid);
  if (holder.procStart !== undefined && now !== undefined && now.start !== holder.procStart) return 'dead';
  return 'alive';
}

/**
 * The run folder's lock holder; null when it is not locked. `malformed` for a lock file that does not parse
 * (a trainer between creating and writing it, or one killed there).
 */
export function readRunLock(runDir: string): RunLockHolder | 'malformed' | null {
  const text = readLockText(runLockPath(runDir));
  return text === null ? null : parseRunLock(text);
}

/** A lock file's holder, or `malformed` when its text does not parse. */
function parseRunLock(text: string): RunLockHolder | 'malformed' {
  try {
    const json = JSON.parse(text) as Partial<RunLockHolder>;
    if (typeof json.pid === 'number' && typeof json.host === 'string' && typeof json.startedAt === 'string')
      return { command: '', ...json } as RunLockHolder;
  } catch {
    /* malformed */
  }
  return 'malformed';
}

/** Why a run folder cannot be trained now: another trainer holds its lock. */
export class RunFolderLocked extends Error {
  constructor(
    readonly runDir: string,
    readonly holder: RunLockHolder | 'malformed',
  ) {
    super(lockedMessage(runDir, holder));
    this.name = 'RunFolderLocked';
  }
}

function lockedMessage(runDir: string, holder: RunLockHolder | 'malformed'): string {
  const file = runLockPath(runDir);
  if (holder === 'malformed')
    return `${runDir} is being trained by another process (its lock ${file} is being written); if no trainer runs on it, delete ${file}`;
  const where = holder.host === hostname() ? `pid ${holder.pid}` : `pid ${holder.pid} on host ${holder.host}`;
  const what = holder.command === '' ? '' : ` (${holder.command})`;
  return `${runDir} is being trained by ${where} since ${holder.startedAt}${what}; wait for it to finish or stop it, or, if no such trainer runs, delete ${file}`;
}

/** A held run-folder lock. */
export class RunLock {
  private released = false;
  private readonly onExit = () => this.release();
  private readonly onSignal = (signal: NodeJS.Signals) => {
    // While training, train/interrupt.ts's watch owns SIGINT, SIGTERM and SIGHUP (it saves, then the lock is released
    // on the way out). Outside it (data being prepared), the signal ends the process as it would have without
    // this listener, less the lock.
    if (interruptWatchActive()) return;
    this.release();
    process.exit(signalExitStatus(signal as StopSignal));
  };

  constructor(
    readonly runDir: string,
    readonly holder: RunLockHolder,
  ) {
    process.on('exit', this.onExit);
    for (const s of STOP_SIGNALS) process.on(s, this.onSignal);
  }

  /** Removes the lock file if it is still this process's; idempotent, synchronous (it runs on 'exit'). */
  release(): void {
    if (this.released) return;
    this.released = true;
    process.off('exit', this.onExit);
    for (const s of STOP_SIGNALS) process.off(s, this.onSignal);
    const now = readRunLock(this.runDir);
    if (now !== null && now !== 'malformed' && now.pid === this.holder.pid && now.startedAt === this.holder.startedAt)
      unlinkSync(runLockPath(this.runDir));
  }
}

/**
 * Takes the run folder's lock (the folder must exist). A stale lock (its process gone) is taken over, with
 * `warn` saying whose it was.
 * @throws RunFolderLocked naming the folder and the holder's pid when a live trainer holds it
 */
export function lockRunFolder(runDir: string, warn: (line: string) => void): RunLock {
  const file = runLockPath(runDir);
  const self = processStat('self');
  const holder: RunLockHolder = {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    ...(self === undefined ? {} : { procStart: self.start }),
    command: process.argv
      .slice(1)
      .map((a, i) => (i === 0 ? a.replace(/^.*\//, '').replace(/^frost\.js$/, 'frost') : a))
      .join(' '),
  };
  // Rounds: a stale lock taken over (removed, then created), or a contender's won lock read and refused.
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const text = readLockText(file);
      if (text === null) continue; // released between the two calls
      const other = parseRunLock(text);
      if (attempt === 2 || !isStale(file, other)) throw new RunFolderLocked(runDir, other);
      testPause('lock-takeover');
      if (!removeStaleLock(file, text)) continue; // another trainer took it over: the next round names it
      warn(
        other === 'malformed'
          ? `${runDir}: taking over an unreadable lock left by a trainer that stopped while writing it`
          : `${runDir}: taking over the lock of pid ${other.pid} (started ${other.startedAt}), which no longer runs`,
      );
      continue;
    }
    try {
      writeSync(fd, `${JSON.stringify(holder)}\n`);
    } finally {
      closeSync(fd);
    }
    return new RunLock(runDir, holder);
  }
  const other = readRunLock(runDir);
  throw new RunFolderLocked(runDir, other ?? 'malformed');
}

/**
 * Removes the stale lock `file`, which read `stale`, unless another trainer has meanwhile taken it over: of
 * several trainers that found the same stale lock, one removes it (whoever creates `file.takeover` exclusively),
 * and only while it still reads `stale`, so a lock a contender has just created is never removed. The others wait
 * for the winner, then read its lock and are refused, naming it.
 * @returns whether the stale lock is gone (the caller may create its own); false when another took it over
 */
function removeStaleLock(file: string, stale: string): boolean {
  const marker = `${file}.takeover`;
  let fd: number;
  try {
    fd = openSync(marker, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    waitForTakeover(marker);
    return false;
  }
  try {
    writeSync(fd, `${process.pid}\n`);
    closeSync(fd);
    // Under the marker no other trainer removes the lock, and a dead holder cannot: what reads `stale` now is it.
    const now = readLockText(file);
    if (now === null) return true;
    if (now !== stale) return false;
    unlinkSync(file);
    return true;
  } finally {
    unlinkSync(marker);
  }
}

/**
 * Waits, at most a few seconds, for the trainer that holds `marker` to finish taking the lock over; a marker whose
 * trainer died while holding it (between two system calls) is removed.
 */
function waitForTakeover(marker: string): void {
  const wait = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 250 && existsSync(marker); i++) {
    let pid: number;
    try {
      pid = Number(readFileSync(marker, 'utf8').trim());
    } catch {
      return; // gone: the takeover is done
    }
    const age = Date.now() - (statSync(marker, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (pid > 0 && age > 1000 && !processRuns(pid)) {
      rmSync(marker, { force: true });
      return;
    }
    Atomics.wait(wait, 0, 0, 20);
  }
}

/**
 * Test hook (`FROST_TEST_PAUSE_AT=point:ms`): sleeps `ms` at `point`, to widen a race a test provokes (`lock-takeover`:
 * between finding a lock stale and removing it, where two trainers once both took one over).
 */
function testPause(point: string): void {
  const [at, ms] = (process.env.FROST_TEST_PAUSE_AT ?? '').split(':');
  if (at === point) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(ms));
}

/** The lock file's text; null when there is none. */
function readLockText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function isStale(file: string, holder: RunLockHolder | 'malformed'): boolean {
  if (holder === 'malformed') {
    if (!existsSync(file)) return true;
    return Date.now() - statSync(file).mtimeMs > UNWRITTEN_GRACE_MS;
  }
  return holderState(holder) === 'dead';
}

/**
 * Runs `fn` holding the run folder's lock, released however it ends.
 * @throws RunFolderLocked when another live trainer holds it
 */
export async function withRunLock<T>(
  runDir: string,
  fn: () => Promise<T>,
  warn: (line: string) => void = (line) => process.stderr.write(`frost: warning: ${line}\n`),
): Promise<T> {
  const lock = lockRunFolder(runDir, warn);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}
