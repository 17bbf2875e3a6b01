import type { Block, ReportLayout } from './layout.ts';
import { el, text } from './svg/svg.ts';
import type { Table } from './tables.ts';

/**
 * report.html: one self-contained file (inline CSS and SVG, no scripts, no external assets), so it
 * can be mailed, attached to an issue or served as a static file. Numeric cells carry the
 * report.json path they show as `data-path`.
 */
const STYLE = `
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;margin:0;background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:24px 32px;background:#fff}
h1{font-size:1.6em;margin:0 0 8px}h2{margin-top:36px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{margin:24px 0 4px;font-size:1.05em}
p.note{color:#555;font-size:.9em;margin:4px 0 8px;max-width:80ch}
nav a{margin-right:14px}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;font-size:.9em;margin:4px 0 12px}
caption{text-align:left;font-weight:600;padding:4px 0;font-size:1.05em;white-space:nowrap}
th,td{padding:4px 10px;border-bottom:1px solid #eee;white-space:nowrap}
th{text-align:left;background:#f3f3f3}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:16px 0}figure svg{max-width:100%;height:auto}figcaption{color:#555;font-size:.9em;max-width:80ch}
`;

function tableHtml(t: Table): string {
  const cls = (i: number) => (t.numeric[i] ? 'num' : undefined);
  const head = el('tr', {}, ...t.header.map((h, i) => el('th', { class: cls(i), scope: 'col' }, text(h))));
  const body = t.rows.map((row) =>
    el('tr', {}, ...row.map((c, i) => el('td', { class: cls(i), 'data-path': c.path }, text(c.text)))),
  );
  return [
    el(
      'div',
      { class: 'table-wrap' },
      el(
        'table',
        { id: `table-${t.id}`, 'data-table': t.id },
        el('caption', {}, text(t.title)),
        el('thead', {}, head),
        el('tbody', {}, ...body),
      ),
    ),
    ...(t.note ? [el('p', { class: 'note' }, text(t.note))] : []),
  ].join('\n');
}

function blockHtml(b: Block): string {
  if (b.kind === 'text') return el('p', {}, text(b.text));
  if (b.kind === 'table') return tableHtml(b.table);
  return el('figure', { id: `chart-${b.chart.id}` }, b.chart.svg, el('figcaption', {}, text(b.chart.caption)));
}

export function renderHtml(layout: ReportLayout): string {
  const nav = el('nav', {}, ...layout.sections.map((s) => el('a', { href: `#${s.id}` }, text(s.title))));
  const sections = layout.sections.map((s) =>
    el('section', { id: s.id }, el('h2', {}, text(s.title)), ...s.blocks.map(blockHtml)),
  );
  const head = el(
    'head',
    {},
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    el('title', {}, text(layout.title)),
    el('style', {}, STYLE),
  );
  const body = el(
    'body',
    {},
    el('main', {}, el('h1', {}, text(layout.title)), el('p', {}, text(layout.intro)), nav, ...sections),
  );
  return `<!doctype html>\n${el('html', { lang: 'en' }, head, body)}\n`;
}
