import { mkdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { runStatus } from '../../report/run-status.ts';
import { arrayScript, reportScript } from '../slurm/batch-scripts.ts';
import { sbatch, squeueStates } from '../slurm/commands.ts';
import { cellsPath, readSubmissions, recordSubmission, slurmDir, writeCells } from '../slurm/records.ts';
import { type GridExecution, type GridExecutor, registerExecutor } from './executor.ts';

/** sbatch flags frost sets itself on the array and the report job. */
const FROST_SETS = ['--array', '-a', '--dependency', '-d', '--output', '-o', '--parsable'];

/**
 * A Slurm cluster: the grid's cells as the tasks of one job array (task i trains cell i, `frost experiment cell`),
 * requeue-safe because each resumes from its own checkpoint, and a job that depends on the array's end
 * (`afterany`) and writes the grid's report from its finished runs. Returns once both are submitted; their ids are
 * kept in `<out>/slurm/jobs.json` and `frost experiment status` reads their states.
 */
export const slurmExecutor: GridExecutor = {
  name: 'slurm',
  summary: 'submit each run as a task of one Slurm job array, and the report as a job that waits for it',
  async execute(e: GridExecution) {
    const sbatchFlags = e.schedulerFlags;
    const refused = sbatchFlags.filter((f) => FROST_SETS.some((s) => f === s || f.startsWith(`${s}=`)));
    if (refused.length > 0)
      throw new Error(`--sbatch ${refused.join(' ')}: frost sets the array, dependency and output files itself`);
    // Every folder that holds a run is checked now, while someone reads the answer, not in a task's log.
    const todo = [];
    for (const cell of e.cells) {
      const status = await runStatus(cell.dir, e.budget);
      if (status.kind !== 'missing') await e.check(cell);
      if (status.kind === 'finished') e.log(`${cell.dir}: finished (${status.reason}), reused`);
      else todo.push(cell);
    }
    await refuseLiveSubmission(e.out);
    const name = `frost-${basename(e.out)}`;
    const places = { out: e.out, cwd: process.cwd(), name };
    await mkdir(join(e.out, 'logs'), { recursive: true });
    await writeCells({ out: e.out, budget: e.budget, logsDir: e.logsDir, cells: todo });
    const arrayFile = join(slurmDir(e.out), 'array.sbatch');
    const reportFile = join(slurmDir(e.out), 'report.sbatch');
    await writeFile(reportFile, reportScript(places, e.reportArgv), { mode: 0o755 });
    let array = '';
    if (todo.length > 0) {
      await writeFile(arrayFile, arrayScript(places, cellsPath(e.out), todo.length), { mode: 0o755 });
      array = await sbatch(sbatchFlags, arrayFile);
    }
    const report = await sbatch(
      [...sbatchFlags, ...(array === '' ? [] : [`--dependency=afterany:${array}`])],
      reportFile,
    );
    await recordSubmission(e.out, {
      array,
      report,
      submitted: new Date().toISOString(),
      cells: todo.map((c) => c.name),
      sbatch: [...sbatchFlags],
    });
    const trains =
      todo.length === 0 ? 'no run left to train' : `array job ${array} trains ${todo.map((c) => c.name).join(', ')}`;
    const summary = `submitted to Slurm: ${trains}; job ${report} writes the report when it ends (frost experiment status ${e.out})`;
    e.log(summary);
    return { kind: 'submitted', summary };
  },
};
registerExecutor(slurmExecutor);

/** @throws Error when the grid's last submission still has a job pending or running: its tasks would train twice */
async function refuseLiveSubmission(out: string): Promise<void> {
  const last = (await readSubmissions(out)).at(-1);
  if (last === undefined) return;
  const ids = [last.array, last.report].filter((id) => id !== '');
  const live = (await squeueStates(ids)).filter((s) =>
    [
      'PENDING',
      'RUNNING',
      'REQUEUED',
      'CONFIGURING',
      'COMPLETING',
      'SUSPENDED',
      'REQUEUE_HOLD',
      'REQUEUE_FED',
    ].includes(s.state),
  );
  if (live.length > 0)
    throw new Error(
      `${out} was submitted to Slurm before (array job ${last.array}, report job ${last.report}) and ${live.length} of its jobs are not done: wait for them (frost experiment status ${out}) or scancel them`,
    );
}
