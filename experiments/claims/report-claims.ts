import { type LayoutInserts, table, text } from '../../report/layout.ts';
import type { LmReport } from '../../report/lm-schema.ts';
import type { Report } from '../../report/schema.ts';
import { claimTable } from './claim.ts';
import { lmClaimTable } from './lm-claim.ts';
import { figure2Sentence, figure2Table } from '../paper/figure2.ts';
import { paperTables } from '../paper/index.ts';
import { verdictSentences } from './verdicts.ts';

/**
 * The papers' claims as a report shows them, handed to report/'s layout as plain sections and tables: the
 * verdicts first, the paper's own tables leading the quality section and the claim table after chrF, Figure 2
 * heading the output matrix. `frost report` and `frost experiment mt-heads` write every report with them.
 */
export function reportClaims(report: Report): LayoutInserts {
  const claim = claimTable(report);
  const fig2Text = figure2Sentence(report);
  const fig2 = figure2Table(report);
  return {
    sections: [
      {
        after: null,
        section: { id: 'verdicts', title: "The paper's claims here", blocks: verdictSentences(report).map(text) },
      },
    ],
    opening: {
      quality: paperTables(report).map(table),
      'output-matrix': [...(fig2Text ? [text(fig2Text)] : []), ...(fig2 ? [table(fig2)] : [])],
    },
    afterTable: { chrf: claim ? [table(claim)] : [] },
  };
}

/** DRILL's rare-word claim on a language-model report: its own section after the perplexity. */
export function lmReportClaims(report: LmReport): LayoutInserts {
  const claim = lmClaimTable(report);
  return {
    sections: [
      { after: 'perplexity', section: { id: 'claim', title: 'Rare words', blocks: claim ? [table(claim)] : [] } },
    ],
  };
}
