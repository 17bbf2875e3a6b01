import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { z } from 'zod';
import { describeIssues } from '../core/zod-issues.ts';
import { CAPTION_RESULTS_FILE, type CaptionResults, captionResultsSchema, type CaptionRow } from './caption-results.ts';
import type { CollectedRun } from '../report/collect-run.ts';
import { RunFolder } from '../train/run-folder.ts';
import type { RunBudget } from '../report/run-status.ts';
import { REPORT_FILES, reportSchema, type RunReport, type StopKind } from '../report/schema.ts';
import { budgetFields, differingFields, flagsField, type RunField } from './run-identity.ts';

/**
 * The finished runs a grid's committed report keeps. runs/ is not in git, so a grid that needs several
 * sessions of one machine would, on a fresh clone, train its finished runs again. A run's report row holds
 * every number the report shows of it (mt-heads: test BLEU, the learning curve, the norms' sample for Fig. 2;
 * caption-heads: the test scores and the example images' captions), so a run whose folder is gone is taken
 * from its row, when the row is of the run the grid wants, under the grid's budget, and finished. A run
 * folder, where there is one, always wins over the row.
 */
export interface WantedRun {
  arch: string;
  preset: string;
  head: string;
  seed: number;
  src: string;
  tgt: string;
  /** The test translations' beam: a row decoded with another would not compare with the grid's other rows. */
  beam: number;
  /** The extra `frost train` flags (`--train-flags`): a row trained with others is another run. */
  trainFlags: readonly string[];
}

/** The report's path and its rows by run id; no rows when there is no report yet. */
export interface ReportedRuns {
  path: string;
  rows: Map<string, RunReport>;
}

/**
 * The committed report file at `path` as `schema` reads it; undefined when there is none yet.
 * @throws Error naming the file when it is there but is not JSON or not `what`: it would be overwritten, and
 *   what it keeps lost, so the user moves it away on purpose
 */
async function readCommitted<T>(path: string, schema: z.ZodType<T>, what: string): Promise<T | undefined> {
  if (!existsSync(path)) return undefined;
  const moveAway = 'move it away to train the grid without it';
  let data: unknown;
  try {
    data = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path} is not JSON (${(err as Error).message}): ${moveAway}`, { cause: err });
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    throw new Error(`${path} is not ${what} (${describeIssues(parsed.error.issues, { max: 3 })}): ${moveAway}`);
  }
  return parsed.data;
}

/** @throws Error naming the file when a report.json is there but is not JSON or not a frost report */
export async function readReportedRuns(reportDir: string): Promise<ReportedRuns> {
  const path = join(reportDir, REPORT_FILES.json);
  const report = await readCommitted(path, reportSchema, 'a frost report');
  return { path, rows: new Map(report?.runs.map((r) => [r.id, r])) };
}

/** caption-heads' results.json at `reportDir`, with its path; undefined results when there are none yet. */
export async function readReportedCaptions(reportDir: string): Promise<{ path: string; results?: CaptionResults }> {
  const path = join(reportDir, CAPTION_RESULTS_FILE);
  const results = await readCommitted(path, captionResultsSchema, 'caption-heads results');
  return { path, ...(results === undefined ? {} : { results }) };
}

/** Why a row that `had` these fields and stopped for `stopKind` cannot stand for the run `wanted`; null when it can. */
function reuseMismatch(
  had: Record<string, RunField>,
  wanted: Record<string, RunField>,
  stopKind: StopKind | null | undefined,
): string | null {
  const differs = differingFields(had, wanted);
  if (differs !== null) return `it has ${differs.had}; this grid wants ${differs.wanted}`;
  // Unfinished rows come only from reports of older frost; an unrecorded stop cannot be told from one.
  if (stopKind == null) return 'its training did not record that it finished';
  return null;
}

/** Why `row` cannot stand for the run `want` under `budget`, or null when it can. */
export function rowMismatch(row: RunReport, want: WantedRun, budget: RunBudget): string | null {
  const { training: t } = row;
  const had = { arch: row.arch, preset: row.preset, head: row.head, seed: row.seed, src: row.src, tgt: row.tgt };
  const decoded = { beam: row.test.beam };
  const ran = {
    trainFlags: flagsField(t.trainFlags),
    epochs: t.budgetEpochs,
    updates: t.budgetUpdates,
    minutes: t.budgetMinutes,
  };
  const wanted = { ...want, trainFlags: flagsField(want.trainFlags), ...budgetFields(budget) };
  return reuseMismatch({ ...had, ...decoded, ...ran }, wanted, t.stopKind);
}

/**
 * A caption-heads run as its grid wants it. The data set (by name), the beam and the training flags are the results
 * file's: a row scored on another test split, decoded with another beam or trained otherwise would not compare with
 * the grid's other rows.
 */
export interface WantedCaptionRun {
  arch: string;
  head: string;
  preset: string;
  seed: number;
  data: string;
  beam: number;
  /** The extra `frost train` flags (`--train-flags`). */
  trainFlags: readonly string[];
}

/** Why `row` of `results` cannot stand for the caption run `want` under `budget`, or null when it can. */
export function captionRowMismatch(
  row: CaptionRow,
  results: Pick<CaptionResults, 'data' | 'beam' | 'trainFlags'>,
  want: WantedCaptionRun,
  budget: RunBudget,
): string | null {
  const had = { arch: row.arch, head: row.head, preset: row.preset, seed: row.seed };
  const scored = { data: results.data, beam: results.beam, trainFlags: flagsField(results.trainFlags) };
  return reuseMismatch(
    { ...had, ...scored, ...budgetFields(row.budget) },
    { ...want, trainFlags: flagsField(want.trainFlags), ...budgetFields(budget) },
    row.stopKind,
  );
}

/** What a committed row says of a grid run: of another run (what differs), or kept (what to say of it). */
export type RowVerdict<K> = { mismatch: string } | { kept: K; summary: string };

/**
 * The runs of `grid` that have no folder here and whose committed row (`judge`; undefined where the file at `path`
 * has none) stands for them, by folder. A run folder always wins over a row; every reuse is logged, and every row of
 * another run with what differs, as it will be overwritten.
 */
export function keepReportedRuns<R extends { dir: string }, K>(
  grid: readonly R[],
  path: string,
  judge: (run: R) => RowVerdict<K> | undefined,
  log: (line: string) => void,
): Map<string, K> {
  const kept = new Map<string, K>();
  for (const run of grid) {
    if (RunFolder.exists(run.dir)) continue;
    const verdict = judge(run);
    if (verdict === undefined) continue;
    if ('mismatch' in verdict) {
      log(`${run.dir}: ${path} has a row '${basename(run.dir)}' of another run (${verdict.mismatch}); not reused`);
      continue;
    }
    log(`${run.dir}: no run folder; finished in ${path} (${verdict.summary}), reused`);
    kept.set(run.dir, verdict.kept);
  }
  return kept;
}

/**
 * A row as collectRun gives it: its comparison with a baseline is made again among the new report's runs. It keeps
 * its BLEU interval, which the comparison keeps only beside the baseline checkpoint it was computed against.
 */
export function asCollected(row: RunReport): CollectedRun {
  const { baseline: _baseline, learnableDecrease: _decrease, bleuDelta: _delta, ...run } = row;
  return run;
}
