import type { Command } from 'commander';
import { basename, resolve } from 'node:path';
import { RARE_WORD_THRESHOLD } from '../../../core/metrics/word-usage.ts';
import { collectReport } from '../../../report/collect.ts';
import { collectLmReport, lmRunFlags, refuseMixedRuns } from '../../../report/collect-lm.ts';
import { writeLmReport, writeReport } from '../../../report/write-report.ts';
import { lmReportClaims, reportClaims } from '../../../experiments/claims/report-claims.ts';
import { initBackend } from '../../../train/backend/select.ts';
import { intOption } from './serve.ts';

interface ReportFlags {
  out: string;
  title?: string;
  beam: number;
  rareThreshold: number;
  bins: number;
  quiet?: boolean;
}

/**
 * `frost report RUN... --out DIR`: compares training runs in report.md, report.html and
 * report.json. Runs without a current export are exported to `<run>/export`; test translations
 * and timings are cached in `<run>/eval/`, so a second report on the same runs takes seconds.
 * Language-model runs get their own report (perplexity per head, `frost eval`'s numbers); a list
 * mixing them with other runs is refused.
 */
export function registerReport(program: Command): void {
  program
    .command('report')
    .description(
      'compare training runs: sizes, speed, test BLEU, vocabulary usage, output-matrix analyses; language-model runs: perplexity per head and frequency bin (report.md, report.html, report.json)',
    )
    .argument('<runs...>', 'run folders written by `frost train`')
    .requiredOption(
      '--out <dir>',
      'folder for the report (e.g. reports/NAME; `frost serve` shows reports/ under /reports/)',
    )
    .option('--title <text>', 'report title (default: the output folder name)')
    .option('--beam <k>', 'beam width of the test translations and latency runs', intOption('--beam', 1), 5)
    .option(
      '--rare-threshold <n>',
      'a word is rare below this many training occurrences',
      intOption('--rare-threshold', 1),
      RARE_WORD_THRESHOLD,
    )
    .option(
      '--bins <n>',
      'language-model runs: word-frequency bins (as `frost eval --bins`)',
      intOption('--bins', 1, 100),
      5,
    )
    .option('--quiet', 'no progress lines')
    .action(async (runs: string[], flags: ReportFlags) => {
      await initBackend({ quiet: true });
      const log = flags.quiet ? undefined : (line: string) => process.stderr.write(`${line}\n`);
      const out = resolve(flags.out);
      const isLm = await lmRunFlags(runs);
      refuseMixedRuns(runs, isLm);
      if (isLm.every(Boolean)) {
        const report = await collectLmReport(runs, { title: flags.title ?? basename(out), bins: flags.bins, log });
        process.stdout.write(`${(await writeLmReport(report, out, lmReportClaims(report))).html}\n`);
        return;
      }
      const report = await collectReport(runs, {
        title: flags.title ?? basename(out),
        beam: flags.beam,
        rareThreshold: flags.rareThreshold,
        log,
      });
      const written = await writeReport(report, out, reportClaims(report));
      process.stdout.write(`${written.html}\n`);
    });
}
