import { basename, join } from 'node:path';
import { RunFolder } from '../train/run-folder.ts';
import type { RunBudget } from '../report/run-status.ts';
import { refuseOtherArguments, refuseOtherRun } from './run-identity.ts';
import type { ExecutionOutcome, GridExecutor } from './executors/executor.ts';
import { localExecutor } from './executors/local.ts';
import { checkBudget, finishedRuns } from './side-by-side.ts';

export { describeBudget } from './side-by-side.ts';
export { sideBySideThreads, threadsPerRun } from './grid-threads.ts';

/**
 * A grid of training runs: every head on every language pair and every seed, with one budget. The budget is
 * a time budget (`budgetMinutes`), an epoch cap (`maxEpochs`), both (whichever comes first), or neither:
 * then every run trains until its schedule's stopping rule (`stopAfter` epochs without a validation gain,
 * which report/stopping-rule.ts states from the run's config).
 */
export interface GridSpec {
  out: string;
  dataDir: string;
  arch: string;
  preset: string;
  /** The seed of a grid of one seed. @default 1 */
  seed?: number;
  /** The seed axis: every run of the grid once per seed. @default [seed] */
  seeds?: readonly number[];
  budgetMinutes?: number;
  maxEpochs?: number;
  /** Optimizer updates per run: equal work for every run whatever the machine's load. */
  maxUpdates?: number;
  pairs: { src: string; tgt: string }[];
  heads: string[];
  /** More `frost train` flags for new runs; a resumed run keeps its own configuration. */
  trainFlags?: string[];
  /**
   * At most this many runs train at once, queued across pairs, each with the cores shared out among `jobs`;
   * for budgets of work only (see side-by-side.ts). @default each pair's heads side by side, pairs in turn
   */
  jobs?: number;
  /** Run folders not to train: runs a committed report keeps (reported-runs.ts). */
  skip?: ReadonlySet<string>;
  log: (line: string) => void;
}

export interface GridRun {
  dir: string;
  head: string;
  src: string;
  tgt: string;
  seed: number;
}

/** The grid's seeds: `seeds`, or the one `seed` (default 1). */
export function gridSeeds(spec: Pick<GridSpec, 'seed' | 'seeds'>): readonly number[] {
  const seeds = spec.seeds ?? [spec.seed ?? 1];
  if (seeds.length === 0) throw new RangeError('a grid needs at least one seed');
  if (new Set(seeds).size !== seeds.length) throw new RangeError(`seeds repeat: ${seeds.join(', ')}`);
  return seeds;
}

/**
 * The run folders of a grid, pair by pair, each head's seeds together: `<out>/<src>-<tgt>-<head>/`, or with more than
 * one seed `<out>/<src>-<tgt>-<head>-seed<seed>/` (a grid of one seed keeps the names it always had).
 */
export function gridRuns(spec: Pick<GridSpec, 'out' | 'pairs' | 'heads' | 'seed' | 'seeds'>): GridRun[] {
  const seeds = gridSeeds(spec);
  const name = (src: string, tgt: string, head: string, seed: number) =>
    `${src}-${tgt}-${head}${seeds.length === 1 ? '' : `-seed${seed}`}`;
  return spec.pairs.flatMap(({ src, tgt }) =>
    spec.heads.flatMap((head) =>
      seeds.map((seed) => ({ dir: join(spec.out, name(src, tgt, head, seed)), head, src, tgt, seed })),
    ),
  );
}

/** The grid's budget as run-status.ts reads it. */
export function gridBudget(spec: Pick<GridSpec, 'budgetMinutes' | 'maxEpochs' | 'maxUpdates'>): RunBudget {
  return {
    ...(spec.maxUpdates === undefined ? {} : { updates: spec.maxUpdates }),
    ...(spec.budgetMinutes === undefined ? {} : { minutes: spec.budgetMinutes }),
    ...(spec.maxEpochs === undefined ? {} : { epochs: spec.maxEpochs }),
  };
}

/** Refuses to reuse or resume a folder that holds some other run, naming what differs. */
async function checkSameRun(run: GridRun, spec: Omit<GridSpec, 'log'>): Promise<void> {
  const { config: c } = await RunFolder.openTask(run.dir, 'translation');
  // A run with a time budget of its own would stop there again: a grid without one (epochs, or the stopping
  // rule) cannot finish it, and its runs would not be comparable.
  if (spec.budgetMinutes === undefined && c.maxMinutes !== undefined)
    throw new Error(
      `${run.dir} was trained under a time budget of ${c.maxMinutes} min; this grid trains by epochs or the stopping rule, without one: choose another --out`,
    );
  if (spec.maxEpochs === undefined && spec.budgetMinutes === undefined && c.epochs !== undefined)
    throw new Error(
      `${run.dir} was trained with an epoch cap of ${c.epochs}; this grid trains until the stopping rule: give --max-epochs ${c.epochs} or more, or choose another --out`,
    );
  const want = { arch: spec.arch, preset: spec.preset, head: run.head, seed: run.seed, src: run.src, tgt: run.tgt };
  const have = { arch: c.arch, preset: c.preset, head: c.head.name, seed: c.seed, src: c.data.src, tgt: c.data.tgt };
  refuseOtherRun(run.dir, have, want);
  refuseOtherArguments(run.dir, c.argv, newRunArguments(run, spec));
}

/** The `frost train` arguments that start one of the grid's runs: the grid's settings, then its --train-flags. */
function newRunArguments(run: GridRun, spec: Omit<GridSpec, 'log'>): string[] {
  return [
    ...['--arch', spec.arch, '--head', run.head, '--data', spec.dataDir, '--src', run.src, '--tgt', run.tgt],
    ...['--preset', spec.preset, '--seed', String(run.seed), '--out', run.dir],
    ...(spec.trainFlags ?? []),
  ];
}

/** Where a grid trains: the executor, its scheduler's flags, and the command that reports the grid. */
export interface GridExecutorChoice {
  /** @default the local executor */
  executor?: GridExecutor;
  /** Flags for its scheduler (`--sbatch`). @default none */
  schedulerFlags?: readonly string[];
  /**
   * The `frost` arguments that report the grid's finished runs: an executor that returns before they finish
   * (slurm) runs them once they have. @default none
   */
  reportArgv?: readonly string[];
}

/**
 * Trains what the grid still lacks, through `executor` (executors/): the local one trains the heads of each pair side
 * by side (they share the machine's noise), pairs one after another, or with `jobs` the whole grid `jobs` runs at a
 * time, and resolves once every run has finished; Slurm's submits the runs as one job array and resolves at once.
 * Finished runs are left alone; unfinished ones are resumed with `frost train --resume`, which keeps their elapsed
 * time, so an interrupted grid resumes where it stopped and a larger budget extends the runs already there.
 */
export async function trainGrid(
  spec: GridSpec,
  how: GridExecutorChoice = {},
): Promise<{ runs: GridRun[]; outcome: ExecutionOutcome }> {
  const executor = how.executor ?? localExecutor;
  const all = gridRuns(spec);
  const runs = all.filter((r) => !spec.skip?.has(r.dir));
  const budget = gridBudget(spec);
  checkBudget(budget);
  const seeds = gridSeeds(spec);
  const outcome = await executor.execute({
    out: spec.out,
    cells: runs.map((run) => ({
      dir: run.dir,
      name: basename(run.dir),
      group: `${run.src}-${run.tgt}`,
      newRunArgv: ['train', ...newRunArguments(run, spec)],
    })),
    budget,
    logsDir: join(spec.out, 'logs'),
    together: spec.jobs ?? spec.heads.length * seeds.length,
    ...(spec.jobs === undefined ? {} : { jobs: spec.jobs }),
    check: (cell) =>
      checkSameRun(
        runs.find((r) => r.dir === cell.dir)!,
        spec,
      ),
    schedulerFlags: how.schedulerFlags ?? [],
    reportArgv: how.reportArgv ?? [],
    log: spec.log,
  });
  return { runs: all, outcome };
}

/**
 * The grid's runs whose folders hold a finished run (side-by-side.ts), training nothing.
 * @throws Error when a folder holds some other run, as trainGrid does
 */
export async function finishedGridRuns(spec: Omit<GridSpec, 'log'>): Promise<GridRun[]> {
  const runs = gridRuns(spec).filter((r) => !spec.skip?.has(r.dir));
  return finishedRuns(runs, gridBudget(spec), (run) => checkSameRun(run, spec));
}
