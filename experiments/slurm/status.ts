import { type RunStatus, runStatus } from '../../report/run-status.ts';
import { readCheckpointInfo } from '../../train/run-folder.ts';
import { type JobState, sacctStates, squeueStates } from './commands.ts';
import { cellsPath, readCells, readSubmissions } from './records.ts';

/**
 * `frost experiment status GRID`: each cell of the grid's last Slurm submission, as Slurm has it and as its run
 * folder has it. Slurm's word comes from squeue while the controller holds the job (pending, running, and for a
 * few minutes after it ends), then from sacct where the cluster keeps accounting; where neither knows it any more,
 * the folder alone says how the run stands (a run folder is the truth about training in any case: a task that
 * COMPLETED trained its run to its budget).
 */

export interface CellStatus {
  task: number;
  name: string;
  dir: string;
  /** Slurm's state of the task, or null when neither squeue nor sacct knows it. */
  slurm: JobState | null;
  folder: RunStatus;
  /** The last checkpoint's epoch and step, when there is one. */
  saved: { epoch: number; step: number } | null;
}

export interface GridStatus {
  out: string;
  array: string;
  report: { id: string; slurm: JobState | null };
  submitted: string;
  /** sacct: not asked (squeue knew every job), answered, or off (the cluster keeps no accounting). */
  sacct: 'not asked' | 'answered' | 'off';
  cells: CellStatus[];
}

export async function gridStatus(out: string): Promise<GridStatus> {
  const grid = await readCells(cellsPath(out));
  const last = (await readSubmissions(out)).at(-1);
  if (last === undefined) throw new Error(`${out}: no Slurm job was recorded (slurm/jobs.json)`);
  const ids = [last.array, last.report].filter((id) => id !== '');
  const live = await squeueStates(ids);
  // sacct only for what the controller has forgotten.
  const forgotten = live.length < last.cells.length + 1;
  const accounted = forgotten ? await sacctStates(ids) : null;
  const known = (jobId: string, task: number | null) =>
    live.find((s) => s.jobId === jobId && s.task === task) ??
    accounted?.find((s) => s.jobId === jobId && s.task === task) ??
    null;
  const cells = await Promise.all(
    grid.cells.map(async (cell, task) => {
      const info = await readCheckpointInfo(cell.dir, 'last').catch(() => null);
      return {
        task,
        name: cell.name,
        dir: cell.dir,
        slurm: last.array === '' ? null : known(last.array, task),
        folder: await runStatus(cell.dir, grid.budget),
        saved: info === null ? null : { epoch: info.epoch, step: info.step },
      };
    }),
  );
  return {
    out,
    array: last.array,
    report: { id: last.report, slurm: known(last.report, null) },
    submitted: last.submitted,
    sacct: !forgotten ? 'not asked' : accounted === null ? 'off' : 'answered',
    cells,
  };
}

const slurmWords = (s: JobState | null) =>
  s === null ? 'unknown to Slurm now' : `${s.state}${s.detail === '' ? '' : ` (${s.detail})`}`;

function folderWords(c: CellStatus): string {
  const at = c.saved === null ? '' : `, saved at epoch ${c.saved.epoch}, step ${c.saved.step}`;
  if (c.folder.kind === 'missing') return 'not started';
  if (c.folder.kind === 'finished') return `finished (${c.folder.reason})`;
  return `unfinished, ${c.folder.elapsedMinutes.toFixed(1)} min${at}`;
}

/** The status as a table: one line per cell, then the report job. */
export function renderGridStatus(s: GridStatus): string {
  const rows = [
    ['task', 'run', 'slurm', 'run folder'],
    ...s.cells.map((c) => [`${s.array}_${c.task}`, c.name, slurmWords(c.slurm), folderWords(c)]),
    [s.report.id, 'report', slurmWords(s.report.slurm), ''],
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) =>
    r
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
  const source = { 'not asked': 'squeue', answered: 'squeue, then sacct', off: 'squeue (sacct: no accounting here)' }[
    s.sacct
  ];
  return [`${s.out}: submitted ${s.submitted}; Slurm states from ${source}`, ...lines, ''].join('\n');
}
