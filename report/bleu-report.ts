import { collectReport } from './collect.ts';
import type { Report } from './schema.ts';
import type { ReportKind } from './task-reports.ts';
import { writeReport } from './write-report.ts';

/**
 * The BLEU report (collect.ts, layout.ts): sizes, speed, test BLEU, vocabulary usage and the output matrices,
 * each run against the learned run trained on the same thing.
 */
export const bleuReport: ReportKind<Report> = {
  name: 'bleu',
  collect: (runDirs, { title, beam, rareThreshold, parityTolerance, log }) =>
    collectReport(runDirs, { title, beam, rareThreshold, parityTolerance, log }),
  write: writeReport,
};
