import type { Command } from 'commander';
import { basename, resolve } from 'node:path';
import { RARE_WORD_THRESHOLD } from '../../../core/metrics/word-usage.ts';
import { bleuReport } from '../../../report/bleu-report.ts';
import { chooseReport } from '../../../report/choose-report.ts';
import { perplexityReport } from '../../../report/perplexity-report.ts';
import { registerReportInserts, writeReportOf } from '../../../report/report-inserts.ts';
import { lmReportClaims, reportClaims } from '../../../experiments/claims/report-claims.ts';
import { initBackend } from '../../../train/backend/select.ts';
import { exportsParityOption } from './parity-option.ts';
import { intOption } from './serve.ts';

// The papers' claims are experiments/'s, which report/ may not import: each is handed to the report it judges here.
registerReportInserts(bleuReport, reportClaims);
registerReportInserts(perplexityReport, lmReportClaims);

interface ReportFlags {
  out: string;
  title?: string;
  beam: number;
  rareThreshold: number;
  bins: number;
  parityTolerance?: number;
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
    .addOption(exportsParityOption())
    .option('--quiet', 'no progress lines')
    .action(async (runs: string[], flags: ReportFlags) => {
      await initBackend({ quiet: true });
      const log = flags.quiet ? undefined : (line: string) => process.stderr.write(`${line}\n`);
      const out = resolve(flags.out);
      // Each run's task says which report it goes into (report/tasks/); runs of two reports are refused.
      const kind = await chooseReport(runs);
      const written = await writeReportOf(
        kind,
        runs,
        {
          title: flags.title ?? basename(out),
          beam: flags.beam,
          rareThreshold: flags.rareThreshold,
          bins: flags.bins,
          parityTolerance: flags.parityTolerance,
          log,
        },
        out,
      );
      process.stdout.write(`${written.html}\n`);
    });
}
