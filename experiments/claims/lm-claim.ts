import { formatSignedPercent } from '../../report/format.ts';
import type { LmReport } from '../../report/lm-schema.ts';
import type { Cell, Table } from '../../report/tables.ts';

/**
 * DRILL's claim (Pappas & Henderson) as the language-model report checks it: the deep residual
 * output layer helps most on rare words, so a `drill` run's perplexity on the rarest bin is below
 * the `learned` run's, and by a larger share than over all test tokens.
 */
const CLAIM_HEAD = 'drill';

/** One row per `drill` run that has a `learned` baseline in the report. */
export function lmClaimTable(report: LmReport): Table | null {
  const rows: Cell[][] = [];
  const rare = report.settings.bins;
  report.runs.forEach((r, i) => {
    if (r.head !== CLAIM_HEAD || r.baseline === null || r.vsBaseline === null) return;
    const overall = r.vsBaseline.test;
    const rareChange = r.vsBaseline.bins[rare - 1] ?? null;
    const answer = (ok: boolean | null) => ({ text: ok === null ? '–' : ok ? 'yes' : 'no' });
    rows.push([
      { text: r.id },
      { text: r.baseline },
      { text: formatSignedPercent(overall), path: `runs.${i}.vsBaseline.test` },
      { text: formatSignedPercent(rareChange), path: `runs.${i}.vsBaseline.bins.${rare - 1}` },
      answer(rareChange === null ? null : rareChange < 0),
      answer(rareChange === null || overall === null ? null : rareChange < overall),
    ]);
  });
  if (rows.length === 0) return null;
  return {
    id: 'lm-claim',
    title: "DRILL's rare-word claim on this machine",
    note: `drill against the learned head of the same architecture, preset and corpus: test perplexity overall and in bin ${rare} (the rarest words), as a change against learned (negative: lower, better). The claim holds when drill's rare-bin perplexity is lower than learned's, and by a larger share than overall. Equal training budgets compare models at the same cost, not at convergence.`,
    header: [
      'run',
      'baseline',
      'test ppl vs learned',
      `bin ${rare} ppl vs learned`,
      `bin ${rare} lower`,
      'larger gain on rare words',
    ],
    numeric: [false, false, true, true, false, false],
    rows,
  };
}
