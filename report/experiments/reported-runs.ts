import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CollectedRun } from '../collect-run.ts';
import type { RunBudget } from '../run-status.ts';
import { REPORT_FILES, reportSchema, type RunReport } from '../schema.ts';

/**
 * The finished runs a grid's committed report keeps. runs/ is not in git, so a grid that needs several
 * sessions of one machine would, on a fresh clone, train its finished runs again. A run's report row holds
 * every number the report shows of it (test BLEU, the learning curve, the norms' sample for Fig. 2), so a
 * run whose folder is gone is taken from its row, when the row is of the run the grid wants, under the
 * grid's budget, and finished. A run folder, where there is one, always wins over the row.
 */
export interface WantedRun {
  arch: string;
  preset: string;
  head: string;
  seed: number;
  src: string;
  tgt: string;
}

/** The report's path and its rows by run id; no rows when there is no report yet. */
export interface ReportedRuns {
  path: string;
  rows: Map<string, RunReport>;
}

/**
 * @throws Error naming the file when a report.json is there but is not JSON or not a frost report: it would
 *   be overwritten, and what it keeps lost, so the user moves it away on purpose
 */
export async function readReportedRuns(reportDir: string): Promise<ReportedRuns> {
  const path = join(reportDir, REPORT_FILES.json);
  if (!existsSync(path)) return { path, rows: new Map() };
  const moveAway = 'move it away to train the grid without it';
  let data: unknown;
  try {
    data = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path} is not JSON (${(err as Error).message}): ${moveAway}`, { cause: err });
  }
  const parsed = reportSchema.safeParse(data);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`${path} is not a frost report (${issues.join('; ')}): ${moveAway}`);
  }
  return { path, rows: new Map(parsed.data.runs.map((r) => [r.id, r])) };
}

/** Why `row` cannot stand for the run `want` under `budget`, or null when it can. */
export function rowMismatch(row: RunReport, want: WantedRun, budget: RunBudget): string | null {
  const wanted: Record<string, string | number | null> = {
    ...want,
    epochs: budget.epochs ?? null,
    updates: budget.updates ?? null,
    minutes: budget.minutes ?? null,
  };
  const have: Record<string, string | number | null | undefined> = {
    arch: row.arch,
    preset: row.preset,
    head: row.head,
    seed: row.seed,
    src: row.src,
    tgt: row.tgt,
    epochs: row.training.budgetEpochs,
    updates: row.training.budgetUpdates,
    minutes: row.training.budgetMinutes,
  };
  const differs = Object.keys(wanted).filter((k) => have[k] !== wanted[k]);
  if (differs.length > 0)
    return `it has ${differs.map((k) => `${k}=${String(have[k] ?? 'none')}`).join(', ')}; this grid wants ${differs
      .map((k) => `${k}=${String(wanted[k] ?? 'none')}`)
      .join(', ')}`;
  // Unfinished rows come only from reports of older frost; an unrecorded stop cannot be told from one.
  if (row.training.stopKind == null) return 'its training did not record that it finished';
  return null;
}

/** A row as collectRun gives it: its comparison with a baseline is made again among the new report's runs. */
export function asCollected(row: RunReport): CollectedRun {
  const { baseline: _baseline, learnableDecrease: _decrease, bleuDelta: _delta, ...run } = row;
  return run;
}
