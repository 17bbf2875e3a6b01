import { join } from 'node:path';
import { REPO_ROOT } from '../../train/data/paths.ts';

/**
 * The two batch scripts a grid is submitted as. The array's task i runs `frost experiment cell` for cell i, which
 * trains it as the local executor would (the same folder and `frost train` arguments) and resumes it from its own
 * checkpoint when the task starts again. `--requeue` lets Slurm put a task back in the queue (preemption, a node
 * lost, or the cell itself asking); `--signal=B:USR1@SECONDS` tells the cell its time is nearly up, and it then
 * stops its trainer, which saves, and requeues its task. The report script writes the grid's report from its
 * finished runs once the array has ended, whatever became of its tasks. Flags given to sbatch on its command line
 * (`--sbatch`) override these directives.
 */

/** How long before its time limit a task is told to save and requeue: a save, and the cell's own exit, fit in it. */
export const SIGNAL_SECONDS = 120;

/** `arg` quoted for a POSIX shell when it needs to be. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}

/** `frost` as this checkout runs it: this Node, this bin/frost.js. */
function frostCommand(argv: readonly string[]): string {
  return [process.execPath, join(REPO_ROOT, 'bin', 'frost.js'), ...argv].map(shellQuote).join(' ');
}

export interface ScriptPlaces {
  /** The grid folder. */
  out: string;
  /** Where the jobs start (relative paths in the report's arguments are from here). */
  cwd: string;
  /** The jobs' name in squeue. */
  name: string;
}

export function arrayScript(places: ScriptPlaces, cellsFile: string, cells: number): string {
  return [
    '#!/bin/bash',
    `# frost experiment --executor slurm: task i of this array trains cell i of ${shellQuote(cellsFile)}.`,
    `#SBATCH --job-name=${places.name}`,
    `#SBATCH --array=0-${cells - 1}`,
    '#SBATCH --requeue',
    `#SBATCH --signal=B:USR1@${SIGNAL_SECONDS}`,
    '#SBATCH --open-mode=append',
    `#SBATCH --output=${shellQuote(join(places.out, 'logs', 'slurm-%A_%a.out'))}`,
    `#SBATCH --chdir=${shellQuote(places.cwd)}`,
    // exec: the cell is the batch shell, so `--signal=B:...` reaches it.
    `exec ${frostCommand(['experiment', 'cell', cellsFile])} "$SLURM_ARRAY_TASK_ID"`,
    '',
  ].join('\n');
}

export function reportScript(places: ScriptPlaces, reportArgv: readonly string[]): string {
  return [
    '#!/bin/bash',
    `# frost experiment --executor slurm: the report of ${shellQuote(places.out)}, once its array has ended.`,
    `#SBATCH --job-name=${places.name}-report`,
    `#SBATCH --output=${shellQuote(join(places.out, 'logs', 'slurm-report-%j.out'))}`,
    '#SBATCH --open-mode=append',
    `#SBATCH --chdir=${shellQuote(places.cwd)}`,
    `exec ${frostCommand(reportArgv)}`,
    '',
  ].join('\n');
}
