import { collectLmReport } from './collect-lm.ts';
import type { LmReport } from './lm-schema.ts';
import type { ReportKind } from './task-reports.ts';
import { writeLmReport } from './write-report.ts';

/** The perplexity report (collect-lm.ts, lm-layout.ts): `frost eval`'s numbers per head and frequency bin. */
export const perplexityReport: ReportKind<LmReport> = {
  name: 'perplexity',
  collect: (runDirs, { title, bins, log }) => collectLmReport(runDirs, { title, bins, log }),
  write: writeLmReport,
};
