import { execFile } from 'node:child_process';

/**
 * Slurm's client commands (sbatch, squeue, sacct, scontrol) as frost runs them: each with the environment it was
 * given (SLURM_CONF names the cluster), its output parsed here and nowhere else.
 */

/** Debian's packages of Slurm's commands and daemons, for the messages that say what is missing. */
export const SLURM_PACKAGES = 'slurm-client (sbatch, squeue, sacct, scontrol; slurm-wlm for a cluster of your own)';

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: readonly string[]): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err && (err as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new Error(`${command} is not installed: Slurm's commands are needed here (Debian: ${SLURM_PACKAGES})`));
        return;
      }
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** @throws Error with the command line and what it printed when it fails */
async function ok(command: string, args: readonly string[]): Promise<string> {
  const r = await run(command, args);
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

/** Submits `script` with `sbatch --parsable` and the flags; returns the job id (an array's id for an array). */
export async function sbatch(flags: readonly string[], script: string): Promise<string> {
  const out = (await ok('sbatch', ['--parsable', ...flags, script])).trim();
  // `--parsable` prints `id` or `id;cluster`.
  const id = out.split(';')[0]!;
  if (!/^\d+$/.test(id)) throw new Error(`sbatch printed '${out}', not a job id`);
  return id;
}

/** Puts a running job (an array task's own id: SLURM_JOB_ID) back in the queue; it starts again from its script. */
export async function requeue(jobId: string): Promise<void> {
  await ok('scontrol', ['requeue', jobId]);
}

/** A job's or an array task's state as Slurm reports it: PENDING, RUNNING, COMPLETED, FAILED, ... */
export interface JobState {
  /** The array job's id, or the job's. */
  jobId: string;
  /** The array task, or null for a job that is not an array's. */
  task: number | null;
  state: string;
  /** squeue's reason (Resources, Dependency, BeginTime) or sacct's exit code; '' when there is none. */
  detail: string;
  source: 'squeue' | 'sacct';
}

function parseId(field: string): { jobId: string; task: number | null } | null {
  const m = /^(\d+)(?:_(\d+))?$/.exec(field);
  return m ? { jobId: m[1]!, task: m[2] === undefined ? null : Number(m[2]) } : null;
}

/**
 * The jobs the controller still holds (pending, running, and finished ones for MinJobAge, 300 s by default), array
 * tasks one by one. A job id the controller no longer knows is left out.
 */
export async function squeueStates(jobIds: readonly string[]): Promise<JobState[]> {
  const r = await run('squeue', [
    '--noheader',
    '--array',
    '--states=all',
    `--jobs=${jobIds.join(',')}`,
    '--format=%i|%T|%r',
  ]);
  if (r.code !== 0) {
    if (/Invalid job id/i.test(r.stderr)) return [];
    throw new Error(`squeue failed (exit ${r.code}): ${r.stderr.trim()}`);
  }
  return r.stdout.split('\n').flatMap((line) => {
    const [id, state, reason] = line.trim().split('|');
    const parsed = parseId(id ?? '');
    if (parsed === null || state === undefined) return [];
    return [
      { ...parsed, state, detail: reason === undefined || reason === 'None' ? '' : reason, source: 'squeue' as const },
    ];
  });
}

/**
 * The jobs as the accounting database has them (finished ones included, for as long as it keeps them); null where the
 * cluster keeps no accounting (`AccountingStorageType=accounting_storage/none`: sacct says it is disabled).
 */
export async function sacctStates(jobIds: readonly string[]): Promise<JobState[] | null> {
  const r = await run('sacct', [
    '--noheader',
    '--parsable2',
    `--jobs=${jobIds.join(',')}`,
    '--format=JobID,State,ExitCode',
  ]);
  if (r.code !== 0) return null;
  return r.stdout.split('\n').flatMap((line) => {
    const [id, state, exit] = line.trim().split('|');
    const parsed = parseId(id ?? ''); // steps (`12_3.batch`) do not parse: the job's own line says it
    if (parsed === null || state === undefined) return [];
    // 'CANCELLED by 0' -> 'CANCELLED'
    return [
      {
        ...parsed,
        state: state.split(' ')[0]!,
        detail: exit === '0:0' ? '' : `exit ${exit}`,
        source: 'sacct' as const,
      },
    ];
  });
}
