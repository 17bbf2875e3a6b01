import { formatCount, formatFixed1, formatFixed2, formatPercent, MISSING } from './format.ts';
import { type LayoutInserts, placeInserts, type ReportLayout } from './layout.ts';
import type { LmReport, LmRunReport } from './lm-schema.ts';
import type { Cell, Table } from './tables.ts';

/**
 * The language-model report's reading order (`frost report runs/lm-*`): perplexity per head, the
 * frequency bins, then training, with the sections a caller hands in (DRILL's claim, from experiments/claims/,
 * after the perplexity). Rendered by the same Markdown and HTML renderers.
 */

/** A number of run `i` at `path` below `runs.<i>`, so the HTML cell names what it shows. */
function num(i: number, path: string, v: number | null, format: (v: number | null) => string): Cell {
  return { text: format(v), path: `runs.${i}.${path}` };
}

function perplexityTable(report: LmReport): Table {
  const bins = report.runs[0]?.test.bins.map((b) => b.bin) ?? [];
  return {
    id: 'lm-perplexity',
    title: 'Perplexity per head',
    note: `Perplexity of the ${report.settings.checkpoint} checkpoint, as \`frost eval\` measures it (its eval.json): valid and test overall, then test by ${report.settings.bins} bins of training-word frequency (bin 1 = the most frequent words, bin ${report.settings.bins} = the rarest and unseen ones). Fewer learnable parameters: against the learned run of the same architecture, preset and corpus.`,
    header: ['run', 'head', 'learnable', 'fewer learnable', 'valid ppl', 'test ppl', ...bins.map((b) => `bin ${b}`)],
    numeric: [false, false, true, true, true, true, ...bins.map(() => true)],
    rows: report.runs.map((r, i) => [
      { text: r.id },
      { text: r.head },
      num(i, 'params.learnable', r.params.learnable, formatCount),
      num(i, 'learnableDecrease', r.learnableDecrease, formatPercent),
      num(i, 'valid.perplexity', r.valid.perplexity, formatFixed2),
      num(i, 'test.perplexity', r.test.perplexity, formatFixed2),
      ...bins.map((_, k) => num(i, `test.bins.${k}.perplexity`, r.test.bins[k]?.perplexity ?? null, formatFixed2)),
    ]),
  };
}

/** The bins are the training corpus's, so runs on one corpus share them: shown for the first run. */
function binTable(report: LmReport): Table | null {
  const first: LmRunReport | undefined = report.runs[0];
  if (!first) return null;
  return {
    id: 'lm-bins',
    title: 'Frequency bins',
    note: `Each bin holds an equal share of the training tokens, words ranked by training count; test tokens are those scored in ${first.id}'s test split.`,
    header: ['bin', 'word types', 'training counts', 'test tokens'],
    numeric: [true, true, false, true],
    rows: first.test.bins.map((b, k) => [
      { text: String(b.bin) },
      num(0, `test.bins.${k}.types`, b.types, formatCount),
      { text: `${formatCount(b.minCount)}–${formatCount(b.maxCount)}` },
      num(0, `test.bins.${k}.tokens`, b.tokens, formatCount),
    ]),
  };
}

function trainingTable(report: LmReport): Table {
  return {
    id: 'lm-training',
    title: 'Training',
    note: 'Epochs, steps and minutes from the last checkpoint; the evaluated checkpoint is the one with the best validation perplexity.',
    header: ['run', 'epochs', 'steps', 'minutes', 'budget', 'evaluated', 'evaluated step', 'stopped because'],
    numeric: [false, true, true, true, true, false, true, false],
    rows: report.runs.map((r, i) => [
      { text: r.id },
      num(i, 'training.epochs', r.training.epochs, formatCount),
      num(i, 'training.steps', r.training.steps, formatCount),
      num(i, 'training.minutes', r.training.minutes, formatFixed1),
      num(i, 'training.budgetMinutes', r.training.budgetMinutes, formatFixed1),
      { text: r.checkpoint.which },
      num(i, 'checkpoint.step', r.checkpoint.step, formatCount),
      { text: r.training.stopReason ?? MISSING },
    ]),
  };
}

export function lmReportLayout(report: LmReport, inserts: LayoutInserts = {}): ReportLayout {
  const table = (t: Table | null) => (t ? [{ kind: 'table' as const, table: t }] : []);
  const m = report.machine;
  return {
    title: report.title,
    intro:
      `${report.runs.length} language-model runs, measured on ${report.created.slice(0, 10)} on ${m.cpu} (${m.cores} cores), Node ${m.node}. ` +
      'Perplexities are those of `frost eval` (each run’s eval.json, recomputed when its checkpoint changed); every number below is in report.json.',
    sections: placeInserts(
      [
        {
          id: 'perplexity',
          title: 'Perplexity',
          blocks: [...table(perplexityTable(report)), ...table(binTable(report))],
        },
        { id: 'runs', title: 'Runs', blocks: table(trainingTable(report)) },
      ],
      inserts,
    ),
  };
}
