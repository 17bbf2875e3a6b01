import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { StopSignal } from '../train/interrupt.ts';
import { holdsResumableCheckpoint } from '../train/resume-checkpoint.ts';
import { readCheckpointInfo } from '../train/run-folder.ts';
import { holderState, readRunLock, RunFolderLocked } from '../train/run-lock.ts';
import { type RunBudget, runStatus } from '../report/run-status.ts';
import { ExperimentInterrupted, liveChildren } from './live-children.ts';
import { runFrost } from './spawn-frost.ts';

/** The budget in words, for logs and report titles: '30 min', 'at most 40 epochs', 'until the stopping rule'. */
export function describeBudget(budget: RunBudget): string {
  const parts = [
    ...(budget.minutes === undefined ? [] : [`${budget.minutes} min`]),
    ...(budget.epochs === undefined ? [] : [`at most ${budget.epochs} epochs`]),
    ...(budget.updates === undefined ? [] : [`${budget.updates} updates`]),
  ];
  return parts.length === 0 ? 'until the stopping rule' : parts.join(', ');
}

/** The default grid folder's suffix by kind of budget, so runs trained under different budgets never mix. */
export function budgetSuffix(options: { budgetMinutes?: number; maxUpdates?: number }): string {
  if (options.budgetMinutes !== undefined) return '';
  return options.maxUpdates !== undefined ? '-updates' : '-converged';
}

/** @throws RangeError for a time budget that is not positive or an epoch cap that is not a positive integer */
export function checkBudget(budget: RunBudget): void {
  if (budget.minutes !== undefined && !(budget.minutes > 0))
    throw new RangeError(`budgetMinutes must be a positive number, got ${budget.minutes}`);
  if (budget.epochs !== undefined && !(Number.isInteger(budget.epochs) && budget.epochs > 0))
    throw new RangeError(`maxEpochs must be a positive integer, got ${budget.epochs}`);
  if (budget.updates !== undefined && !(Number.isInteger(budget.updates) && budget.updates > 0))
    throw new RangeError(`maxUpdates must be a positive integer, got ${budget.updates}`);
}

/** `frost train` flags that give a run the grid's budget (new runs and resumed ones alike). */
function budgetFlags(budget: RunBudget): string[] {
  return [
    ...(budget.minutes === undefined ? [] : ['--max-minutes', String(budget.minutes)]),
    ...(budget.epochs === undefined ? [] : ['--epochs', String(budget.epochs)]),
    ...(budget.updates === undefined ? [] : ['--max-updates', String(budget.updates)]),
  ];
}

/** One run of a group trained side by side. */
export interface SideBySideRun {
  dir: string;
  /** Its name in logs and its log file's: `<logsDir>/<name>.train.log`. */
  name: string;
  /** `frost train` arguments of a new run, without the budget flags. */
  newRunArgv: string[];
}

export interface SideBySideOptions {
  budget: RunBudget;
  logsDir: string;
  /** Environment of every trainer (thread counts). */
  env: Record<string, string>;
  /**
   * At most this many trainers at once, the others waiting their turn in order. Only for budgets of work
   * (epochs, updates, the stopping rule): under a time budget a run that waited would train on a quieter
   * machine than its siblings. @default every run at once
   */
  jobs?: number;
  /** Refuses a folder that holds some other run; called for every folder that holds one. */
  check?: (run: SideBySideRun) => Promise<void>;
  log: (line: string) => void;
}

/**
 * The groups a grid trains one after another: the runs of each key (a language pair, an architecture) side by side,
 * in the order the keys first appear; or, with `jobs`, the whole grid as one queue, so a core freed by one group's
 * last run goes to the next group's first.
 */
export function trainingGroups<T>(runs: readonly T[], keyOf: (run: T) => string, jobs?: number): T[][] {
  if (jobs !== undefined) return [[...runs]];
  const groups = new Map<string, T[]>();
  for (const run of runs) groups.set(keyOf(run), [...(groups.get(keyOf(run)) ?? []), run]);
  return [...groups.values()];
}

/**
 * Trains what a group of runs still lacks, side by side (they share the machine's noise). Finished runs
 * (report/run-status.ts) are left alone; unfinished ones are resumed with `frost train --resume` and the
 * budget flags, which keeps their elapsed time and epochs, so an interrupted group resumes where it stopped.
 * @throws ExperimentInterrupted when a signal stopped the trainers (live-children.ts), naming where each saved
 * @throws Error naming every failed run, or a run that exited before its budget was used, or a run folder
 *   another trainer holds (before anything starts)
 */
export async function trainSideBySide(runs: SideBySideRun[], opts: SideBySideOptions): Promise<void> {
  const { budget, log } = opts;
  const common = [...budgetFlags(budget), '--quiet'];
  const todo: { run: SideBySideRun; argv: string[]; startAnew?: true }[] = [];
  for (const run of runs) {
    const status = await runStatus(run.dir, budget);
    if (status.kind !== 'missing') await opts.check?.(run);
    if (status.kind === 'finished') {
      log(`${run.dir}: finished (${status.reason}), reused`);
    } else if (status.kind === 'unfinished' && !holdsResumableCheckpoint(run.dir)) {
      // Killed before its first save completed: `--resume` refuses such a folder rather than start it from zero,
      // and here starting from zero is what the grid wants. Only the config, metrics and a torn save are lost.
      log(`${run.dir}: no checkpoint saved yet, started anew`);
      todo.push({ run, argv: [...run.newRunArgv, ...common], startAnew: true });
    } else if (status.kind === 'unfinished') {
      log(`${run.dir}: resuming at ${status.elapsedMinutes.toFixed(1)} min (${describeBudget(budget)})`);
      todo.push({ run, argv: ['train', '--resume', run.dir, ...common] });
    } else {
      todo.push({ run, argv: [...run.newRunArgv, ...common] });
    }
  }
  if (todo.length === 0) return;
  const threads = Object.entries(opts.env)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const jobs = opts.jobs ?? todo.length;
  if (!(Number.isInteger(jobs) && jobs > 0)) throw new RangeError(`jobs must be a positive integer, got ${jobs}`);
  if (jobs < todo.length && budget.minutes !== undefined)
    throw new RangeError(
      `a time budget needs its runs side by side (a run that waited would train on a quieter machine): drop --jobs, or give --max-updates or --max-epochs`,
    );
  const together = todo.length === 1 ? 'alone' : jobs >= todo.length ? 'side by side' : `${jobs} at a time`;
  // A trainer still on a folder (started by hand, or one of an experiment killed outright, still saving) would
  // refuse its new trainer only once the others had started: refused here, before anything starts.
  for (const { run } of todo) refuseLocked(run.dir);
  // Only once no live trainer holds any of them: the folder goes with its lock.
  for (const t of todo) if (t.startAnew) await rm(t.run.dir, { recursive: true, force: true });
  // The runs that train, by name: a finished one was reused above and is not among them.
  const names = todo.map(({ run }) => run.name).join(', ');
  log(`training ${names} ${together}, ${describeBudget(budget)} each (${threads})`);
  const results = await settleAtMost(
    todo.map(
      ({ run, argv }) =>
        () =>
          runFrost(argv, opts.env, join(opts.logsDir, `${run.name}.train.log`), run.name),
    ),
    jobs,
  );
  const stopped = liveChildren.signal;
  if (stopped) throw await stoppedGroup(stopped, todo, results);
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []));
  if (failed.length > 0) throw new Error(`${failed.length} of ${todo.length} runs failed:\n${failed.join('\n\n')}`);
  for (const { run } of todo) {
    const status = await runStatus(run.dir, budget);
    if (status.kind !== 'finished')
      throw new Error(
        `${run.dir}: training exited before its budget (${describeBudget(budget)}) was used (${status.kind}); see ${opts.logsDir}`,
      );
  }
}

/**
 * The runs whose folders hold a run trainSideBySide would leave alone as finished (report/run-status.ts), training
 * nothing: what a report of a grid so far can show while the rest still trains.
 * @throws Error from `check`, called for every folder that holds a run, when one holds some other run
 */
export async function finishedRuns<R extends { dir: string }>(
  runs: readonly R[],
  budget: RunBudget,
  check: (run: R) => Promise<void>,
): Promise<R[]> {
  checkBudget(budget);
  const finished: R[] = [];
  for (const run of runs) {
    const status = await runStatus(run.dir, budget);
    if (status.kind === 'missing') continue;
    await check(run);
    if (status.kind === 'finished') finished.push(run);
  }
  return finished;
}

/** @throws Error naming the folder and the trainer when a live one holds the run's lock (train/run-lock.ts) */
function refuseLocked(runDir: string): void {
  const holder = readRunLock(runDir);
  if (holder === null || (holder !== 'malformed' && holderState(holder) === 'dead')) return;
  throw new Error(`${new RunFolderLocked(runDir, holder).message}; then rerun this experiment`);
}

/** What a signal left of a group: which runs stopped (and where they saved), finished, failed, never started. */
async function stoppedGroup(
  signal: StopSignal,
  todo: { run: SideBySideRun }[],
  results: PromiseSettledResult<void>[],
): Promise<ExperimentInterrupted> {
  const parts: string[] = [];
  const stopped: string[] = [];
  const notStarted: string[] = [];
  for (const [i, { run }] of todo.entries()) {
    const r = results[i]!;
    if (r.status === 'fulfilled') {
      parts.push(`${run.name} finished`);
    } else if (!(r.reason instanceof ExperimentInterrupted)) {
      parts.push(`${run.name} failed: ${(r.reason as Error).message}`);
    } else if (!r.reason.started) {
      notStarted.push(run.name);
    } else {
      const last = await readCheckpointInfo(run.dir, 'last').catch(() => null);
      stopped.push(`${run.name} (${last ? `saved at step ${last.step}` : 'stopped before its first update'})`);
    }
  }
  const lists = [
    ...(stopped.length === 0 ? [] : [`stopped ${stopped.join(', ')}`]),
    ...(notStarted.length === 0 ? [] : [`not started: ${notStarted.join(', ')}`]),
    ...parts,
  ];
  return new ExperimentInterrupted(signal, `experiment stopped by ${signal}: ${lists.join('; ')}`);
}

/** Runs `tasks` in order with at most `limit` running at once; settles each as Promise.allSettled does. */
export async function settleAtMost<T>(
  tasks: readonly (() => Promise<T>)[],
  limit: number,
): Promise<PromiseSettledResult<T>[]> {
  const results: PromiseSettledResult<T>[] = new Array(tasks.length);
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) {
      const i = next++;
      try {
        results[i] = { status: 'fulfilled', value: await tasks[i]() };
      } catch (reason) {
        results[i] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
  return results;
}
