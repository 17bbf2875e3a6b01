import { type Chart, reportCharts } from './charts.ts';
import type { Report } from './schema.ts';
import { reportTables, type Table } from './tables.ts';

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

/**
 * What a caller adds to a report's own sections, as plain data: report/ lays it out and judges nothing itself
 * (the papers' claims, their verdicts and the papers' own tables are built by experiments/claims/).
 */
export interface LayoutInserts {
  /** Whole sections, each after the report's section of id `after` (null: before the first). */
  sections?: { after: string | null; section: Section }[];
  /** Blocks opening one of the report's sections, by its id. */
  opening?: Record<string, Block[]>;
  /** Blocks right after one of the report's tables, by the table's id. */
  afterTable?: Record<string, Block[]>;
}

export const table = (t: Table): Block => ({ kind: 'table', table: t });
export const text = (t: string): Block => ({ kind: 'text', text: t });
const chart = (c: Chart): Block => ({ kind: 'chart', chart: c });

/** The report's own sections with the caller's sections and opening blocks in place; empty sections dropped. */
export function placeInserts(own: Section[], inserts: LayoutInserts): Section[] {
  const placed = (after: string | null) =>
    (inserts.sections ?? []).filter((s) => s.after === after).map((s) => s.section);
  return [
    ...placed(null),
    ...own.flatMap((s) => [{ ...s, blocks: [...(inserts.opening?.[s.id] ?? []), ...s.blocks] }, ...placed(s.id)]),
  ].filter((s) => s.blocks.length > 0);
}

export function reportLayout(report: Report, inserts: LayoutInserts = {}): ReportLayout {
  const tables = new Map(reportTables(report).map((t) => [t.id, t]));
  const charts = new Map(reportCharts(report).map((c) => [c.id, c]));
  const take = (id: string) => {
    const t = tables.get(id);
    tables.delete(id);
    return [...(t ? [table(t)] : []), ...(inserts.afterTable?.[id] ?? [])];
  };
  const m = report.machine;
  const normCharts = [...charts.values()].filter((c) => c.id.startsWith('norm-frequency-'));
  const pairTables = [...tables.keys()].filter((id) => id.startsWith('pairs-')).flatMap(take);
  return {
    title: report.title,
    intro:
      `${report.runs.length} run${report.runs.length === 1 ? '' : 's'}, measured on ${report.created.slice(0, 10)} on ${m.cpu} (${m.cores} cores), Node ${m.node}, ` +
      `onnxruntime-node ${m.onnxruntime}. Test translations use beam ${report.settings.beam}; every number below is in report.json.`,
    sections: placeInserts(
      [
        {
          id: 'quality',
          title: 'Translation quality and size',
          blocks: [...take('bleu'), ...take('chrf'), ...take('params')],
        },
        {
          id: 'charts',
          title: 'At a glance',
          blocks: ['size', 'bleu-size', 'latency-size'].flatMap((id) =>
            charts.has(id) ? [chart(charts.get(id)!)] : [],
          ),
        },
        { id: 'files', title: 'Files and speed', blocks: [...take('files'), ...take('latency')] },
        { id: 'vocabulary', title: 'Vocabulary', blocks: take('vocabulary') },
        {
          id: 'output-matrix',
          title: 'The output matrix',
          blocks: [...take('matrix'), ...normCharts.map(chart), ...pairTables],
        },
        {
          id: 'runs',
          title: 'Runs',
          blocks: [
            ...take('training'),
            ...(charts.has('learning-curves') ? [chart(charts.get('learning-curves')!)] : []),
          ],
        },
      ],
      inserts,
    ),
  };
}
