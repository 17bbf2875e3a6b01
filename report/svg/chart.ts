import { el, text } from './svg.ts';

/**
 * The outer `<svg>` of every chart. Styles are inside it, so a chart file opened on its own (the
 * Markdown report links them) looks the same as inlined in the HTML report.
 */
const STYLE = [
  'text{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;fill:#222}',
  '.title{font-size:14px;font-weight:600}',
  '.tick,.legend{font-size:11px}',
  '.axis-label{font-size:12px}',
  '.grid{stroke:#e4e4e4;stroke-width:1}',
  '.axis{stroke:#555;stroke-width:1}',
  '.point{stroke:#fff;stroke-width:0.75;fill-opacity:0.85}',
  '.bar{stroke:#fff;stroke-width:0.5}',
  '.line{fill:none;stroke-width:1.75;stroke-linejoin:round}',
].join('');

export interface ChartMeta {
  /** Stable name ('size', 'bleu-size'); also the chart's file name and `data-chart`. */
  id: string;
  title: string;
  width: number;
  height: number;
  /** One line describing the chart for screen readers. */
  description: string;
}

export function chartSvg(meta: ChartMeta, ...body: string[]): string {
  return el(
    'svg',
    {
      xmlns: 'http://www.w3.org/2000/svg',
      viewBox: `0 0 ${meta.width} ${meta.height}`,
      width: meta.width,
      height: meta.height,
      role: 'img',
      'aria-label': meta.description,
      'data-chart': meta.id,
    },
    el('style', {}, STYLE),
    el('title', {}, text(meta.title)),
    el('text', { x: 12, y: 20, class: 'title' }, text(meta.title)),
    ...body,
  );
}
