import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../train/atomic-write.ts';
import { type LayoutInserts, type ReportLayout, reportLayout } from './layout.ts';
import { lmReportLayout } from './lm-layout.ts';
import { type LmReport, lmReportSchema } from './lm-schema.ts';
import { renderHtml } from './render-html.ts';
import { renderMarkdown } from './render-md.ts';
import { type Report, REPORT_FILES, reportSchema } from './schema.ts';

/** The files of a written report. */
export interface WrittenReport {
  dir: string;
  json: string;
  markdown: string;
  html: string;
  charts: string[];
}

/**
 * Writes report.json, report.md (+ charts/*.svg it links) and the self-contained report.html to
 * `dir`. The data is validated first, so a report is never written from data its schema refuses; each
 * file is replaced atomically (train/atomic-write.ts), so a kill or a full disk leaves the previous one whole.
 * `inserts`: sections and blocks the caller adds (the papers' claims, experiments/claims/report-claims.ts).
 */
export async function writeReport(report: Report, dir: string, inserts: LayoutInserts = {}): Promise<WrittenReport> {
  const data = reportSchema.parse(report);
  return writeLaidOut(data, reportLayout(data, inserts), dir);
}

/** The language-model report (`frost report runs/lm-*`): the same files, from its own data and layout. */
export async function writeLmReport(
  report: LmReport,
  dir: string,
  inserts: LayoutInserts = {},
): Promise<WrittenReport> {
  const data = lmReportSchema.parse(report);
  return writeLaidOut(data, lmReportLayout(data, inserts), dir);
}

async function writeLaidOut(data: unknown, layout: ReportLayout, dir: string): Promise<WrittenReport> {
  const chartsDir = join(dir, REPORT_FILES.charts);
  // Charts of runs no longer in the report must not linger beside it.
  await rm(chartsDir, { recursive: true, force: true });
  await mkdir(chartsDir, { recursive: true });
  const charts: string[] = [];
  for (const s of layout.sections) {
    for (const b of s.blocks) {
      if (b.kind !== 'chart') continue;
      const path = join(chartsDir, `${b.chart.id}.svg`);
      await writeFileAtomic(path, `${b.chart.svg}\n`);
      charts.push(path);
    }
  }
  const out = {
    dir,
    json: join(dir, REPORT_FILES.json),
    markdown: join(dir, REPORT_FILES.markdown),
    html: join(dir, REPORT_FILES.html),
    charts,
  };
  await writeFileAtomic(out.json, `${JSON.stringify(data, null, 2)}\n`);
  await writeFileAtomic(out.markdown, renderMarkdown(layout, REPORT_FILES.charts));
  await writeFileAtomic(out.html, renderHtml(layout));
  return out;
}
