import type { Block, ReportLayout } from './layout.ts';
import type { Table } from './tables.ts';

/** `|` would end a Markdown table cell. */
const cell = (s: string) => s.replace(/\|/g, '\\|');

function tableMd(t: Table): string {
  const align = t.numeric.map((n) => (n ? '---:' : '---'));
  const lines = [`### ${t.title}`, '', `| ${t.header.map(cell).join(' | ')} |`, `|${align.join('|')}|`];
  for (const row of t.rows) lines.push(`| ${row.map((c) => cell(c.text)).join(' | ')} |`);
  if (t.note) lines.push('', t.note);
  return lines.join('\n');
}

/**
 * report.md. Charts are linked as files in `chartsDir` (written beside it), since Markdown
 * viewers render SVG images but not inline SVG markup.
 */
export function renderMarkdown(layout: ReportLayout, chartsDir: string): string {
  const block = (b: Block): string => {
    if (b.kind === 'text') return b.text;
    if (b.kind === 'table') return tableMd(b.table);
    return `![${b.chart.id}](${chartsDir}/${b.chart.id}.svg)\n\n${b.chart.caption}`;
  };
  const parts = [`# ${layout.title}`, layout.intro];
  for (const s of layout.sections) parts.push(`## ${s.title}`, ...s.blocks.map(block));
  return `${parts.join('\n\n')}\n`;
}
