import { readFileSync } from 'node:fs';

/**
 * Whether a process of this machine still runs, for those who must tell a live writer's files from a dead one's:
 * a run folder's lock (train/run-lock.ts) and an interrupted folder swap's leftovers (core/interrupted-swap.ts).
 * Node-only.
 */

/** `pid`'s state letter and start time from /proc/PID/stat (Linux; undefined elsewhere or when there is none). */
export function processStat(pid: number | 'self'): { state: string; start: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses): state is field 3, starttime 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, start: fields[19]! };
  } catch {
    return undefined;
  }
}

/**
 * Whether process `pid` of this machine still runs. A zombie has exited and only waits to be reaped (after `kill -9`
 * of a grid and its children that can take a while on a busy machine): it does not run.
 */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: the pid exists but belongs to another user; only ESRCH says it is gone.
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const state = processStat(pid)?.state;
  return state !== 'Z' && state !== 'X';
}
