import { formatCount, formatFixed2, MISSING } from '../../report/format.ts';
import type { Report } from '../../report/schema.ts';
import { type Cell, pairLabel, plain, type Table, unique, value } from '../../report/tables.ts';
import { registerPaperLayout } from './registry.ts';

/**
 * Seed 003's Table 3 for the Transformer: one row per sharing method (the run's head: learned, tied,
 * shared-l2, shared-sqnorm, ...), test BLEU per direction, cased and lower-cased, and the learnable
 * parameters. Seed 003 reports IWSLT'14 with its `iwslt` model, so its numbers are not printed beside
 * frost's Multi30k ones: the layout is the paper's, the comparison is between frost's rows.
 */
function table3(report: Report, runs: number[]): Table {
  const pairs = unique(runs.map((i) => pairLabel(report.runs[i]!)));
  const heads = unique(runs.map((i) => report.runs[i]!.head));
  const find = (head: string, pair: string) =>
    runs.find((i) => report.runs[i]!.head === head && pairLabel(report.runs[i]!) === pair);
  return {
    id: 'paper-table3-transformer',
    title: `Seed 003's Table 3: Transformer, one row per sharing method (beam ${report.settings.beam})`,
    note: "Test BLEU per direction: sacreBLEU 13a on detokenised output, cased (sacreBLEU's default) and lower-cased. Learnable parameters of each direction's run; with a joint vocabulary the source embedding, target embedding and output matrix are one matrix. Seed 003's own figures are on IWSLT'14 with a larger model and are not repeated here.",
    header: ['sharing method', ...pairs.flatMap((p) => [`${p} BLEU`, `${p} lower-cased`, `${p} learnable`])],
    numeric: [false, ...pairs.flatMap(() => [true, true, true])],
    rows: heads.map((head): Cell[] => [
      plain(head),
      ...pairs.flatMap((pair) => {
        const i = find(head, pair);
        if (i === undefined) return [plain(MISSING), plain(MISSING), plain(MISSING)];
        return [
          value(report, i, 'test.bleuCased', formatFixed2),
          value(report, i, 'test.bleu', formatFixed2),
          value(report, i, 'params.learnable', formatCount),
        ];
      }),
    ]),
  };
}

registerPaperLayout({ arch: 'transformer', tables: (report, runs) => [table3(report, runs)] });
