import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { RunFolder } from '../train/run-folder.ts';
import type { RunBudget } from '../report/run-status.ts';
import { refuseOtherArguments, refuseOtherRun } from './run-identity.ts';
import { checkBudget, finishedRuns, trainSideBySide, trainingGroups } from './side-by-side.ts';

export { describeBudget } from './side-by-side.ts';

/**
 * A grid of training runs: every head on every language pair, with one budget and one seed. The budget is
 * a time budget (`budgetMinutes`), an epoch cap (`maxEpochs`), both (whichever comes first), or neither:
 * then every run trains until its schedule's stopping rule (`stopAfter` epochs without a validation gain,
 * which report/stopping-rule.ts states from the run's config).
 */
export interface GridSpec {
  out: string;
  dataDir: string;
  arch: string;
  preset: string;
  seed: number;
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
}

/** The run folders of a grid, pair by pair: `<out>/<src>-<tgt>-<head>/`. */
export function gridRuns(spec: Pick<GridSpec, 'out' | 'pairs' | 'heads'>): GridRun[] {
  return spec.pairs.flatMap(({ src, tgt }) =>
    spec.heads.map((head) => ({ dir: join(spec.out, `${src}-${tgt}-${head}`), head, src, tgt })),
  );
}

/**
 * wasm threads per run when the heads of a pair train side by side: the cores shared out, at least
 * one each. Fixed by the number of heads, not of runs still training, so a resumed run trains under
 * the same conditions as the runs that finished before the interruption.
 */
export function threadsPerRun(heads: number, cores = availableParallelism()): number {
  return Math.max(1, Math.floor(cores / heads));
}

/**
 * The environment of one of `together` trainers side by side: both its thread pools get its share of the cores.
 * Two runs each with an OpenMP BLAS as wide as the machine spin against each other (half the CPU went to the kernel,
 * a lightconv step took twice as long). `wasmThreads` overrides the wasm pool's; an explicit
 * FROST_NATIVE_GEMM_THREADS wins (other work on the machine).
 */
export function sideBySideThreads(together: number, wasmThreads?: number): Record<string, string> {
  const share = threadsPerRun(together);
  return {
    FROST_WASM_THREADS: String(wasmThreads ?? share),
    FROST_NATIVE_GEMM_THREADS: process.env.FROST_NATIVE_GEMM_THREADS ?? String(share),
  };
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
  const want = { arch: spec.arch, preset: spec.preset, head: run.head, seed: spec.seed, src: run.src, tgt: run.tgt };
  const have = { arch: c.arch, preset: c.preset, head: c.head.name, seed: c.seed, src: c.data.src, tgt: c.data.tgt };
  refuseOtherRun(run.dir, have, want);
  refuseOtherArguments(run.dir, c.argv, newRunArguments(run, spec));
}

/** The `frost train` arguments that start one of the grid's runs: the grid's settings, then its --train-flags. */
function newRunArguments(run: GridRun, spec: Omit<GridSpec, 'log'>): string[] {
  return [
    ...['--arch', spec.arch, '--head', run.head, '--data', spec.dataDir, '--src', run.src, '--tgt', run.tgt],
    ...['--preset', spec.preset, '--seed', String(spec.seed), '--out', run.dir],
    ...(spec.trainFlags ?? []),
  ];
}

/**
 * Trains what the grid still lacks, the heads of each pair side by side (they share the machine's
 * noise), pairs one after another; or, with `jobs`, the whole grid `jobs` runs at a time. Finished
 * runs are left alone; unfinished ones are resumed with `frost train --resume`, which keeps their
 * elapsed time, so an interrupted grid resumes where it stopped and a larger budget extends the runs
 * already there.
 */
export async function trainGrid(spec: GridSpec): Promise<GridRun[]> {
  const all = gridRuns(spec);
  const runs = all.filter((r) => !spec.skip?.has(r.dir));
  const budget = gridBudget(spec);
  checkBudget(budget);
  for (const group of trainingGroups(runs, (r) => `${r.src}-${r.tgt}`, spec.jobs)) {
    await trainSideBySide(
      group.map((run) => ({
        dir: run.dir,
        name: `${run.src}-${run.tgt}-${run.head}`,
        newRunArgv: ['train', ...newRunArguments(run, spec)],
      })),
      {
        budget,
        logsDir: join(spec.out, 'logs'),
        env: sideBySideThreads(spec.jobs ?? spec.heads.length),
        ...(spec.jobs === undefined ? {} : { jobs: spec.jobs }),
        check: (r) =>
          checkSameRun(
            group.find((p) => p.dir === r.dir)!,
            spec,
          ),
        log: spec.log,
      },
    );
  }
  return all;
}

/**
 * The grid's runs whose folders hold a finished run (side-by-side.ts), training nothing.
 * @throws Error when a folder holds some other run, as trainGrid does
 */
export async function finishedGridRuns(spec: Omit<GridSpec, 'log'>): Promise<GridRun[]> {
  const runs = gridRuns(spec).filter((r) => !spec.skip?.has(r.dir));
  return finishedRuns(runs, gridBudget(spec), (run) => checkSameRun(run, spec));
}
