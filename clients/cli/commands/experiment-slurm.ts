import type { Command } from 'commander';
import { resolve } from 'node:path';
import { runCell } from '../../../experiments/slurm/cell.ts';
import { gridStatus, renderGridStatus } from '../../../experiments/slurm/status.ts';
import { initBackend } from '../../../train/backend/select.ts';

/**
 * `frost experiment status GRID` and `frost experiment cell CELLS.json I`: what a grid submitted with
 * `--executor slurm` is doing, and what each task of its job array runs (experiments/slurm/).
 */
export function registerExperimentSlurm(experiment: Command): void {
  experiment
    .command('status')
    .description(
      "a grid submitted with --executor slurm: each run's Slurm state (squeue, else sacct) and its run folder's",
    )
    .argument('<grid>', 'the grid folder (the --out it was submitted with)')
    .action(async (grid: string) => {
      process.stdout.write(renderGridStatus(await gridStatus(resolve(grid))));
    });
  experiment
    .command('cell')
    .description(
      "one task of a grid's Slurm job array (its batch script runs it): trains cell I of CELLS.json, resuming it from its checkpoint; SIGUSR1 saves and requeues it",
    )
    .argument('<cells>', '<out>/slurm/cells.json')
    .argument('<index>', 'the cell: $SLURM_ARRAY_TASK_ID')
    .action(async (cells: string, index: string) => {
      await initBackend({ quiet: true });
      const log = (line: string) => process.stderr.write(`${line}\n`);
      const done = await runCell(resolve(cells), Number(index), log);
      log(`${done.dir}: ${done.kind}`);
    });
}
