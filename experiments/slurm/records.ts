import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../../train/atomic-write.ts';

/**
 * What `frost experiment --executor slurm` leaves in `<out>/slurm/`: `cells.json`, the cells of the array it
 * submitted (task i trains cell i: `frost experiment cell` reads it), and `jobs.json`, the jobs it submitted, newest
 * last (`frost experiment status` reads them). The scripts it submitted are there too (`array.sbatch`,
 * `report.sbatch`), to read or resubmit by hand.
 */

export const slurmDir = (out: string): string => join(out, 'slurm');
export const cellsPath = (out: string): string => join(slurmDir(out), 'cells.json');
export const jobsPath = (out: string): string => join(slurmDir(out), 'jobs.json');

const budgetSchema = z.object({
  minutes: z.number().positive().optional(),
  epochs: z.number().int().positive().optional(),
  updates: z.number().int().positive().optional(),
});

const cellsSchema = z.object({
  format: z.literal('frost-grid-cells'),
  version: z.literal(1),
  out: z.string(),
  budget: budgetSchema,
  logsDir: z.string(),
  cells: z.array(z.object({ dir: z.string(), name: z.string(), group: z.string(), newRunArgv: z.array(z.string()) })),
});
export type GridCells = z.infer<typeof cellsSchema>;

const submissionSchema = z.object({
  /** The array job's id: its task i trains cell i. */
  array: z.string(),
  /** The job that writes the report once the array has ended (`--dependency=afterany`). */
  report: z.string(),
  submitted: z.string(),
  /** The cells' names, in task order (as cells.json had them then). */
  cells: z.array(z.string()),
  /** The `--sbatch` flags both jobs were given. */
  sbatch: z.array(z.string()),
});
export type Submission = z.infer<typeof submissionSchema>;

const jobsSchema = z.object({
  format: z.literal('frost-slurm-jobs'),
  version: z.literal(1),
  submissions: z.array(submissionSchema),
});

async function readJson<T>(path: string, schema: z.ZodType<T>, what: string): Promise<T> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new Error(`${path} is missing: ${what}`, { cause: err });
    throw err;
  }
  return schema.parse(JSON.parse(text));
}

export async function writeCells(cells: Omit<GridCells, 'format' | 'version'>): Promise<void> {
  await mkdir(slurmDir(cells.out), { recursive: true });
  const json: GridCells = { format: 'frost-grid-cells', version: 1, ...cells };
  await writeFileAtomic(cellsPath(cells.out), `${JSON.stringify(json, null, 2)}\n`);
}

/** @throws Error naming the file when it is missing: the grid was never submitted to Slurm */
export function readCells(path: string): Promise<GridCells> {
  return readJson(path, cellsSchema, 'no grid was submitted to Slurm there (frost experiment ... --executor slurm)');
}

/** The grid's submissions, oldest first; none when it was never submitted. */
export async function readSubmissions(out: string): Promise<Submission[]> {
  try {
    return (await readJson(jobsPath(out), jobsSchema, '')).submissions;
  } catch (err) {
    if (/is missing/.test((err as Error).message)) return [];
    throw err;
  }
}

export async function recordSubmission(out: string, submission: Submission): Promise<void> {
  const submissions = [...(await readSubmissions(out)), submission];
  await writeFileAtomic(
    jobsPath(out),
    `${JSON.stringify({ format: 'frost-slurm-jobs', version: 1, submissions }, null, 2)}\n`,
  );
}
