import { formatCount, formatFixed2, formatFixed3, MISSING } from '../../report/format.ts';
import type { Report } from '../../report/schema.ts';
import { plain, type Table, value } from '../../report/tables.ts';
import { PAPER_RESULTS, SHORT_RUN_SPEARMAN, shortRunSpearman } from './results.ts';

/** Runs whose target vectors were learned and have a norm-frequency correlation. */
function learnedRuns(report: Report): number[] {
  return report.runs.flatMap((r, i) => (r.matrix?.kind === 'learned' && r.matrix.spearman !== null ? [i] : []));
}

const paperRho = () => PAPER_RESULTS.figure2.spearman.map((x) => x.toFixed(2)).join(' / ');

/**
 * The paper's Figure 2 as a table: each learned head's Spearman ρ of target-vector norm and training
 * frequency, the paper's beside it, and frost's short-run value for the same run where one was measured.
 */
export function figure2Table(report: Report): Table | null {
  const runs = learnedRuns(report);
  if (runs.length === 0) return null;
  return {
    id: 'paper-figure2',
    title: "The paper's Figure 2: norm against frequency of the learned target vectors",
    note: `Spearman ρ over the whole target vocabulary; the scatter plots are below. Paper: ${PAPER_RESULTS.figure2.source}. Short run: ${SHORT_RUN_SPEARMAN.source}.`,
    header: ['run', 'head', 'epochs', 'Spearman ρ', 'paper', 'short run'],
    numeric: [false, false, true, true, true, true],
    rows: runs.map((i) => {
      const r = report.runs[i]!;
      const short = shortRunSpearman(r);
      return [
        plain(r.id),
        plain(r.head),
        value(report, i, 'training.epochs', formatCount),
        value(report, i, 'matrix.spearman', formatFixed3),
        plain(paperRho()),
        plain(short === undefined ? MISSING : formatFixed3(short)),
      ];
    }),
  };
}

const list = (xs: string[]) => (xs.length <= 1 ? xs.join('') : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)!}`);

/**
 * One sentence on Figure 2 from the data: the sign and range of frost's ρ against the paper's, and, for
 * runs with a short-run value, whether the short runs' anti-correlation turned around.
 */
export function figure2Sentence(report: Report): string | null {
  const runs = learnedRuns(report).map((i) => report.runs[i]!);
  if (runs.length === 0) return null;
  const rho = runs.map((r) => r.matrix!.spearman!);
  const range = `${formatFixed2(Math.min(...rho))} to ${formatFixed2(Math.max(...rho))}`;
  const epochs = runs.map((r) => r.training.epochs);
  const sign = rho.every((x) => x > 0) ? 'positively' : rho.every((x) => x <= 0) ? 'negatively' : 'inconsistently';
  const [fewest, most] = [Math.min(...epochs), Math.max(...epochs)];
  let text = `After ${fewest === most ? fewest : `${fewest}–${most}`} epochs the learned target vectors' norms correlate ${sign} with word frequency (ρ ${range}; the paper ${paperRho()}).`;
  const compared = runs.filter((r) => shortRunSpearman(r) !== undefined);
  if (compared.length > 0) {
    const flipped = compared.filter((r) => shortRunSpearman(r)! < 0 && r.matrix!.spearman! > 0);
    const kept = compared.filter((r) => !flipped.includes(r));
    const shown = (r: (typeof runs)[number]) =>
      `${r.id} ${formatFixed2(shortRunSpearman(r))} → ${formatFixed2(r.matrix!.spearman!)}`;
    if (kept.length === 0) text += ` The short runs' anti-correlation turned around (${list(flipped.map(shown))}).`;
    else if (flipped.length === 0)
      text += ` The short runs' anti-correlation did not turn around (${list(kept.map(shown))}).`;
    else
      text += ` The short runs' anti-correlation turned around for ${list(flipped.map(shown))}, not for ${list(kept.map(shown))}.`;
  }
  return text;
}
