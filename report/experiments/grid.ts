import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { RunFolder } from '../../train/run-folder.ts';
import { type RunBudget, runStatus } from '../run-status.ts';
import { runFrost } from './spawn-frost.ts';

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
  pairs: { src: string; tgt: string }[];
  heads: string[];
  /** More `frost train` flags for new runs; a resumed run keeps its own configuration. */
  trainFlags?: string[];
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

/** The grid's budget as run-status.ts reads it. */
export function gridBudget(spec: Pick<GridSpec, 'budgetMinutes' | 'maxEpochs'>): RunBudget {
  return {
    ...(spec.budgetMinutes === undefined ? {} : { minutes: spec.budgetMinutes }),
    ...(spec.maxEpochs === undefined ? {} : { epochs: spec.maxEpochs }),
  };
}

/** The budget in words, for logs and report titles: '30 min', '40 epochs', 'until the stopping rule'. */
export function describeBudget(budget: RunBudget): string {
  const parts = [
    ...(budget.minutes === undefined ? [] : [`${budget.minutes} min`]),
    ...(budget.epochs === undefined ? [] : [`at most ${budget.epochs} epochs`]),
  ];
  return parts.length === 0 ? 'until the stopping rule' : parts.join(', ');
}

/** `frost train` flags that give a run the grid's budget (new runs and resumed ones alike). */
function budgetFlags(budget: RunBudget): string[] {
  return [
    ...(budget.minutes === undefined ? [] : ['--max-minutes', String(budget.minutes)]),
    ...(budget.epochs === undefined ? [] : ['--epochs', String(budget.epochs)]),
  ];
}

/** Refuses to reuse or resume a folder that holds some other run, naming what differs. */
async function checkSameRun(run: GridRun, spec: GridSpec): Promise<void> {
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
  const diff = Object.keys(want).filter((k) => want[k as keyof typeof want] !== have[k as keyof typeof have]);
  if (diff.length > 0) {
    const show = (o: Record<string, unknown>) => diff.map((k) => `${k}=${String(o[k])}`).join(', ');
    throw new Error(
      `${run.dir} holds another run (${show(have)}; this grid wants ${show(want)}): move it away or choose another --out`,
    );
  }
}

/**
 * Trains what the grid still lacks, the heads of each pair side by side (they share the machine's
 * noise), pairs one after another. Finished runs are left alone; unfinished ones are resumed with
 * `frost train --resume`, which keeps their elapsed time, so an interrupted grid resumes where it
 * stopped and a larger budget extends the runs already there.
 */
export async function trainGrid(spec: GridSpec): Promise<GridRun[]> {
  const runs = gridRuns(spec);
  const threads = threadsPerRun(spec.heads.length);
  const budget = gridBudget(spec);
  if (budget.minutes !== undefined && !(budget.minutes > 0))
    throw new RangeError(`budgetMinutes must be a positive number, got ${budget.minutes}`);
  if (budget.epochs !== undefined && !(Number.isInteger(budget.epochs) && budget.epochs > 0))
    throw new RangeError(`maxEpochs must be a positive integer, got ${budget.epochs}`);
  for (const { src, tgt } of spec.pairs) {
    const pairRuns = runs.filter((r) => r.src === src && r.tgt === tgt);
    const todo: { run: GridRun; argv: string[] }[] = [];
    for (const run of pairRuns) {
      const status = await runStatus(run.dir, budget);
      const common = [...budgetFlags(budget), '--quiet'];
      if (status.kind !== 'missing') await checkSameRun(run, spec);
      if (status.kind === 'finished') {
        spec.log(`${run.dir}: finished (${status.reason}), reused`);
        continue;
      }
      if (status.kind === 'unfinished') {
        spec.log(`${run.dir}: resuming at ${status.elapsedMinutes.toFixed(1)} min (${describeBudget(budget)})`);
        todo.push({ run, argv: ['train', '--resume', run.dir, ...common] });
        continue;
      }
      todo.push({
        run,
        argv: [
          'train',
          '--arch',
          spec.arch,
          '--head',
          run.head,
          '--data',
          spec.dataDir,
          '--src',
          src,
          '--tgt',
          tgt,
          '--preset',
          spec.preset,
          '--seed',
          String(spec.seed),
          '--out',
          run.dir,
          ...(spec.trainFlags ?? []),
          ...common,
        ],
      });
    }
    if (todo.length === 0) continue;
    spec.log(
      `training ${todo.map((t) => t.run.head).join(', ')} on ${src}-${tgt} side by side, ${describeBudget(budget)} each, ${threads} wasm thread(s) each`,
    );
    const results = await Promise.allSettled(
      todo.map(({ run, argv }) =>
        runFrost(
          argv,
          { FROST_WASM_THREADS: String(threads) },
          join(spec.out, 'logs', `${src}-${tgt}-${run.head}.train.log`),
        ),
      ),
    );
    const failed = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []));
    if (failed.length > 0) throw new Error(`${failed.length} of ${todo.length} runs failed:\n${failed.join('\n\n')}`);
    for (const { run } of todo) {
      const status = await runStatus(run.dir, budget);
      if (status.kind !== 'finished')
        throw new Error(
          `${run.dir}: training exited before its budget (${describeBudget(budget)}) was used (${status.kind}); see ${join(spec.out, 'logs')}`,
        );
    }
  }
  return runs;
}
