import { type Chart, reportCharts } from './charts.ts';
import { claimTable } from './claim.ts';
import { figure2Sentence, figure2Table } from './paper/figure2.ts';
import { paperTables } from './paper/index.ts';
import type { Report } from './schema.ts';
import { reportTables, type Table } from './tables.ts';
import { verdictSentences } from './verdicts.ts';

/**
 * The report's reading order, shared by the Markdown and HTML renderers: sections of paragraphs,
 * tables and charts. Renderers only format; what goes where is decided here.
 */
export type Block = { kind: 'text'; text: string } | { kind: 'table'; table: Table } | { kind: 'chart'; chart: Chart };

export interface Section {
  id: string;
  title: string;
  blocks: Block[];
}

export interface ReportLayout {
  title: string;
  /** What was measured where, in a sentence or two. */
  intro: string;
  sections: Section[];
}

const table = (t: Table): Block => ({ kind: 'table', table: t });
const chart = (c: Chart): Block => ({ kind: 'chart', chart: c });

export function reportLayout(report: Report): ReportLayout {
  const tables = new Map(reportTables(report).map((t) => [t.id, t]));
  const charts = new Map(reportCharts(report).map((c) => [c.id, c]));
  const take = (id: string) => {
    const t = tables.get(id);
    tables.delete(id);
    return t ? [table(t)] : [];
  };
  const claim = claimTable(report);
  const m = report.machine;
  const normCharts = [...charts.values()].filter((c) => c.id.startsWith('norm-frequency-'));
  const pairTables = [...tables.keys()].filter((id) => id.startsWith('pairs-')).flatMap(take);
  const text = (t: string): Block => ({ kind: 'text', text: t });
  const fig2 = figure2Table(report);
  const fig2Text = figure2Sentence(report);
  return {
    title: report.title,
    intro:
      `${report.runs.length} run${report.runs.length === 1 ? '' : 's'}, measured on ${report.created.slice(0, 10)} on ${m.cpu} (${m.cores} cores), Node ${m.node}, ` +
      `onnxruntime-node ${m.onnxruntime}. Test translations use beam ${report.settings.beam}; every number below is in report.json.`,
    sections: [
      { id: 'verdicts', title: "The paper's claims here", blocks: verdictSentences(report).map(text) },
      {
        id: 'quality',
        title: 'Translation quality and size',
        blocks: [
          ...paperTables(report).map(table),
          ...take('bleu'),
          ...take('chrf'),
          ...(claim ? [table(claim)] : []),
          ...take('params'),
        ],
      },
      {
        id: 'charts',
        title: 'At a glance',
        blocks: ['size', 'bleu-size', 'latency-size'].flatMap((id) => (charts.has(id) ? [chart(charts.get(id)!)] : [])),
      },
      { id: 'files', title: 'Files and speed', blocks: [...take('files'), ...take('latency')] },
      { id: 'vocabulary', title: 'Vocabulary', blocks: take('vocabulary') },
      {
        id: 'output-matrix',
        title: 'The output matrix',
        blocks: [
          ...(fig2Text ? [text(fig2Text)] : []),
          ...(fig2 ? [table(fig2)] : []),
          ...take('matrix'),
          ...normCharts.map(chart),
          ...pairTables,
        ],
      },
      {
        id: 'runs',
        title: 'Runs',
        blocks: [
          ...take('training'),
          ...(charts.has('learning-curves') ? [chart(charts.get('learning-curves')!)] : []),
        ],
      },
    ].filter((s) => s.blocks.length > 0),
  };
}
