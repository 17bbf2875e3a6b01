import { Registry } from '../core/registry.ts';
import type { LayoutInserts } from './layout.ts';
import type { ReportKind, ReportOptions } from './task-reports.ts';
import type { WrittenReport } from './write-report.ts';

/** What a caller adds to one kind of report, from its data (the papers' claims, experiments/claims/). */
type MakeInserts = (report: never) => LayoutInserts;

const reportInserts = new Registry<MakeInserts>('report inserts');

/**
 * Hands `kind`'s reports the sections `make` builds from their data. report/ may not import experiments/, which
 * judges the papers' claims, so the caller that reaches both (the CLI) registers them; a kind without any is
 * written with its own sections only.
 */
export function registerReportInserts<R>(kind: ReportKind<R>, make: (report: R) => LayoutInserts): void {
  reportInserts.register(kind.name, make);
}

/** Collects `runDirs` into a report of `kind` and writes it to `dir`, with the sections registered for it. */
export async function writeReportOf<R>(
  kind: ReportKind<R>,
  runDirs: string[],
  opts: ReportOptions,
  dir: string,
): Promise<WrittenReport> {
  const report = await kind.collect(runDirs, opts);
  const make = reportInserts.find(kind.name) as ((report: R) => LayoutInserts) | undefined;
  return kind.write(report, dir, make?.(report) ?? {});
}
