import { Registry } from '../../core/registry.ts';
import type { RunBudget } from '../../report/run-status.ts';
import type { SideBySideRun } from '../side-by-side.ts';

/**
 * Where a grid's runs train: an executor takes the grid's cells (one training run each, with the `frost train`
 * arguments that start it and the folder it trains in) and trains them. `local` trains them on this machine as
 * child processes and returns when they have finished; `slurm` submits them to a Slurm cluster as one job array and
 * returns at once. Both train the same folders with the same arguments, so a grid is the same grid whichever ran it
 * (and a grid half trained by one can be finished by the other). Each executor file registers itself; a duplicate
 * name throws.
 */

/** One run of the grid. */
export interface GridCell extends SideBySideRun {
  /** What the local executor trains side by side: the language pair, or the architecture. */
  group: string;
}

export interface GridExecution {
  /** The grid folder: runs in it, logs in `<out>/logs/`, an executor's own records in `<out>/<executor>/`. */
  out: string;
  /** The runs the grid still wants (finished ones are reused by whoever trains them). */
  cells: GridCell[];
  budget: RunBudget;
  logsDir: string;
  /** How many runs the local executor trains at once, sharing the cores out among them. */
  together: number;
  /** At most this many runs at once (local), queued across groups. */
  jobs?: number;
  /** Refuses a folder that holds some other run; called for every folder that holds one, before anything trains. */
  check: (cell: GridCell) => Promise<void>;
  /** Flags for the executor's scheduler (slurm: sbatch's, from `--sbatch`); the local executor takes none. */
  schedulerFlags: readonly string[];
  /** `frost` arguments that write the grid's report from its finished runs. */
  reportArgv: readonly string[];
  log: (line: string) => void;
}

/** 'trained': every cell finished here, the caller reports; 'submitted': they train elsewhere, `summary` says where. */
export type ExecutionOutcome = { kind: 'trained' } | { kind: 'submitted'; summary: string };

export interface GridExecutor {
  name: string;
  /** One line for `frost experiment --help`. */
  summary: string;
  execute(execution: GridExecution): Promise<ExecutionOutcome>;
}

const executors = new Registry<GridExecutor>('grid executor');

export function registerExecutor(executor: GridExecutor): void {
  executors.register(executor.name, executor);
}

export function executorNames(): string[] {
  return executors.names();
}

export function getExecutor(name: string): GridExecutor {
  return executors.get(name);
}
