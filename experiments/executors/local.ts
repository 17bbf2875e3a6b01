import { sideBySideThreads } from '../grid-threads.ts';
import { trainingGroups, trainSideBySide } from '../side-by-side.ts';
import { type GridExecution, type GridExecutor, registerExecutor } from './executor.ts';

/**
 * This machine: the cells of each group (a language pair) side by side, groups one after another, or with `jobs`
 * the whole grid `jobs` runs at a time; each trainer a child process with its share of the cores. Resolves once
 * every cell has finished (experiments/side-by-side.ts).
 */
export const localExecutor: GridExecutor = {
  name: 'local',
  summary: 'train on this machine, side by side (the default)',
  async execute(e: GridExecution) {
    if (e.schedulerFlags.length > 0)
      throw new Error(`${e.schedulerFlags.join(' ')}: scheduler flags (--sbatch) are for --executor slurm`);
    for (const group of trainingGroups(e.cells, (c) => c.group, e.jobs)) {
      await trainSideBySide(group, {
        budget: e.budget,
        logsDir: e.logsDir,
        env: sideBySideThreads(e.together),
        ...(e.jobs === undefined ? {} : { jobs: e.jobs }),
        check: (run) => e.check(group.find((c) => c.dir === run.dir)!),
        log: e.log,
      });
    }
    return { kind: 'trained' };
  },
};
registerExecutor(localExecutor);
