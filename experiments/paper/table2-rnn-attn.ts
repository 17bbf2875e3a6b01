import { headIsFrozen } from '../../models/index.ts';
import { formatCount, formatFixed2, formatPercent, MISSING } from '../../report/format.ts';
import type { Report, RunReport } from '../../report/schema.ts';
import { bleuCell, type Cell, pairLabel, plain, type Table, unique, value } from '../../report/tables.ts';
import { registerPaperLayout } from './registry.ts';
import { PAPER_RESULTS } from './results.ts';

type PaperHead = 'learned' | 'tied' | 'fixed';

/** Which of the paper's three rows a frost head compares with: every frozen head with its fixed random vectors. */
export function paperHeadOf(head: string): PaperHead | null {
  if (head === 'learned' || head === 'tied') return head;
  return headIsFrozen(head) ? 'fixed' : null;
}

/** The paper's figure for a run's pair and head, if it reports one. */
export function paperBleu(r: Pick<RunReport, 'src' | 'tgt' | 'head'>): number | null {
  const row = PAPER_RESULTS.table2.bleu[`${r.src}-${r.tgt}`];
  const head = paperHeadOf(r.head);
  return row && head ? row[head] : null;
}

/**
 * The paper's Table 2 for the attention GRU: test BLEU per direction per head with the paper's figure
 * beside frost's, and per direction the learnable parameters and their reduction against `learned`.
 */
function table2(report: Report, runs: number[]): Table {
  const pairs = unique(runs.map((i) => pairLabel(report.runs[i]!)));
  const heads = unique(runs.map((i) => report.runs[i]!.head));
  const t = PAPER_RESULTS.table2;
  const find = (head: string, pair: string) =>
    runs.find((i) => report.runs[i]!.head === head && pairLabel(report.runs[i]!) === pair);
  return {
    id: 'paper-table2',
    title: `The paper's Table 2: test BLEU, frost beside the paper (beam ${report.settings.beam})`,
    note: `Paper: ${t.source}, ${t.data}; its "fixed" row (fixed random target vectors) stands beside every frozen head. Scoring: ${t.scoring}. Learnable parameters and their reduction against the \`learned\` run of the same direction; epochs, wall time and why each run stopped are in the Runs table. A head with runs of several seeds shows their mean ± standard deviation.`,
    header: [
      'head',
      "paper's row",
      ...pairs.flatMap((p) => [`${p} BLEU`, `${p} paper`, `${p} learnable`, `${p} fewer`]),
    ],
    numeric: [false, false, ...pairs.flatMap(() => [true, true, true, true])],
    rows: heads.map((head): Cell[] => [
      plain(head),
      plain(paperHeadOf(head) ?? MISSING),
      ...pairs.flatMap((pair) => {
        const i = find(head, pair);
        if (i === undefined) return [plain(MISSING), plain(MISSING), plain(MISSING), plain(MISSING)];
        const r = report.runs[i]!;
        return [
          bleuCell(report, head, pair, runs),
          plain(formatFixed2(paperBleu(r))),
          value(report, i, 'params.learnable', formatCount),
          r.head === 'learned' ? plain('baseline') : value(report, i, 'learnableDecrease', formatPercent),
        ];
      }),
    ]),
  };
}

registerPaperLayout({ arch: 'rnn-attn', tables: (report, runs) => [table2(report, runs)] });
