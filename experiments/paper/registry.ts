import { Registry } from '../../core/registry.ts';
import type { Report } from '../../report/schema.ts';
import type { Table } from '../../report/tables.ts';

/**
 * The paper's table layouts, one per architecture the paper (or a seed paper) reports on: a report shows
 * the layout of each architecture among its runs. One file per layout registers itself here.
 */
export interface PaperLayout {
  /** The architecture whose runs the layout shows. */
  arch: string;
  /** The layout's tables for the report's runs of `arch` (indices into report.runs, in report order). */
  tables(report: Report, runs: number[]): Table[];
}

const layouts = new Registry<PaperLayout>('paper layout');

export function registerPaperLayout(layout: PaperLayout): void {
  layouts.register(layout.arch, layout);
}

/** The paper tables for a report: for each architecture among its runs (first seen first) that has a layout. */
export function paperTables(report: Report): Table[] {
  const archs = [...new Set(report.runs.map((r) => r.arch))];
  return archs.flatMap((arch) => {
    const layout = layouts.find(arch);
    if (!layout) return [];
    const runs = report.runs.flatMap((r, i) => (r.arch === arch ? [i] : []));
    return layout.tables(report, runs);
  });
}
