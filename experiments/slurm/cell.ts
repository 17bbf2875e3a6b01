import { runStatus } from '../../report/run-status.ts';
import { threadPools } from '../grid-threads.ts';
import { ExperimentInterrupted, liveChildren } from '../live-children.ts';
import { trainSideBySide } from '../side-by-side.ts';
import { requeue } from './commands.ts';
import { readCells } from './records.ts';

/**
 * One task of a grid's job array (`frost experiment cell CELLS.json I`): trains cell I as the local executor would,
 * alone (a new run, a resumed one, or nothing when it has finished), its trainer a child process with the task's
 * CPUs as its threads. SIGTERM (scancel, a time limit reached, a preemption) is forwarded to the trainer, which saves
 * and exits; the cell then exits 143. SIGUSR1 (`--signal=B:USR1@...`, the time limit is near) does the same and then
 * requeues the task (`scontrol requeue`), which starts again from its script and resumes the run where it saved.
 */

/** The trainer's thread pools: the task's CPUs (`--cpus-per-task`), one without it. */
export function cellThreads(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const cpus = Number(env.SLURM_CPUS_PER_TASK);
  const threads = Number.isInteger(cpus) && cpus > 0 ? cpus : 1;
  return threadPools(threads, threads, env);
}

export interface CellOutcome {
  /** 'finished': trained (or found finished); 'requeued': saved and put back in the queue. */
  kind: 'finished' | 'requeued';
  dir: string;
}

export async function runCell(cellsFile: string, index: number, log: (line: string) => void): Promise<CellOutcome> {
  const grid = await readCells(cellsFile);
  const cell = grid.cells[index];
  if (!Number.isInteger(index) || cell === undefined)
    throw new RangeError(`${cellsFile} has cells 0 to ${grid.cells.length - 1}, not ${index}`);
  const jobId = process.env.SLURM_JOB_ID;
  let requeueAsked = false;
  const onUsr1 = () => {
    if (requeueAsked) return;
    requeueAsked = true;
    log(`frost experiment cell: SIGUSR1: the time limit is near; stopping ${cell.name} to requeue it`);
    // With no trainer running, LiveChildren ends the process at once: requeue first.
    if (liveChildren.running.length === 0) void requeueAndExit();
    else liveChildren.receive('SIGTERM');
  };
  const requeueAndExit = async () => {
    await requeueTask(jobId, log);
    process.exit(0);
  };
  // Node's own SIGUSR1 starts its inspector: a handler replaces that.
  process.on('SIGUSR1', onUsr1);
  liveChildren.watch();
  try {
    await trainSideBySide([cell], { budget: grid.budget, logsDir: grid.logsDir, env: cellThreads(), log });
    return { kind: 'finished', dir: cell.dir };
  } catch (err) {
    if (!(requeueAsked && err instanceof ExperimentInterrupted)) throw err;
    // It may have finished as the signal came: then there is nothing to requeue.
    if ((await runStatus(cell.dir, grid.budget)).kind === 'finished') return { kind: 'finished', dir: cell.dir };
    await requeueTask(jobId, log);
    return { kind: 'requeued', dir: cell.dir };
  } finally {
    liveChildren.unwatch();
    process.off('SIGUSR1', onUsr1);
  }
}

async function requeueTask(jobId: string | undefined, log: (line: string) => void): Promise<void> {
  if (jobId === undefined) throw new Error('SLURM_JOB_ID is not set: not in a Slurm job, nothing to requeue');
  // Said first: Slurm ends this job (SIGTERM, then SIGKILL) as it takes the requeue, often before `scontrol` returns.
  log(`frost experiment cell: requeueing job ${jobId}; it resumes from its checkpoint when it starts again`);
  await requeue(jobId);
}
