import { resolve } from 'node:path';
import { RunFolder } from '../train/run-folder.ts';
import { type ReportKind, taskReport, type TaskReport } from './tasks/index.ts';

/** The report `runDirs` go into, found through each run's task (config.json); runs of two reports are refused. */
export async function chooseReport(runDirs: readonly string[]): Promise<ReportKind> {
  if (runDirs.length === 0) throw new Error('a report needs at least one run folder');
  const reports = await Promise.all(
    runDirs.map(async (d) => taskReport((await RunFolder.open(resolve(d))).config.task)),
  );
  refuseMixedRuns(runDirs, reports);
  return reports[0]!.report;
}

/**
 * `frost report` takes one kind of run at a time: a perplexity table and a BLEU table have no column in common, so
 * a list whose runs go into two reports is refused in one line naming both: the runs of one report, then the
 * others. Reports are taken in the alphabetical order of what their runs are called, so the line is the same
 * whatever order the runs were given in. `reports[i]` is run i's.
 */
export function refuseMixedRuns(runDirs: readonly string[], reports: readonly TaskReport[]): void {
  const groups = new Map<ReportKind, { whats: Set<string>; dirs: string[] }>();
  runDirs.forEach((dir, i) => {
    const { report, what } = reports[i]!;
    const group = groups.get(report) ?? { whats: new Set<string>(), dirs: [] };
    group.whats.add(what);
    group.dirs.push(dir);
    groups.set(report, group);
  });
  if (groups.size < 2) return;
  const named = [...groups.values()]
    .map((g) => ({ runs: `${[...g.whats].join(' and ')} runs`, dirs: g.dirs }))
    .sort((a, b) => (a.runs < b.runs ? -1 : a.runs > b.runs ? 1 : 0));
  const [first, ...rest] = named;
  throw new Error(
    `cannot report ${first!.runs} (${first!.dirs.join(', ')}) together with other runs (${rest.flatMap((g) => g.dirs).join(', ')}): run \`frost report\` once for each kind`,
  );
}
