import type { Scale } from './scale.ts';
import { el, text } from './svg.ts';

/** The plotting area inside a chart: room on the left for y tick labels, below for x ones. */
export interface Frame {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

export function makeFrame(width: number, height: number, legendRows = 0): Frame {
  return { width, height, left: 64, right: width - 16, top: 36 + legendRows * 18, bottom: height - 44 };
}

export interface AxisSpec {
  label: string;
  /** Log10 scale (for values spanning decades: word frequencies, latencies). */
  log?: boolean;
  /** Tick label text. @default compact number */
  format?: (v: number) => string;
}

/** Compact tick labels: 1.5k, 2M, 0.25. */
function compactNumber(v: number): string {
  const abs = Math.abs(v);
  if (abs >= 1e9) return `${Number((v / 1e9).toPrecision(3))}G`;
  if (abs >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (abs >= 1e3) return `${Number((v / 1e3).toPrecision(3))}k`;
  return String(Number(v.toPrecision(3)));
}

/** Grid lines, tick labels and axis titles. `x` may be null for a categorical x axis drawn by the caller. */
export function drawAxes(
  f: Frame,
  x: { scale: Scale; spec: AxisSpec } | null,
  y: { scale: Scale; spec: AxisSpec },
): string {
  const parts: string[] = [];
  const fy = y.spec.format ?? compactNumber;
  for (const t of y.scale.ticks) {
    const py = y.scale(t);
    parts.push(el('line', { x1: f.left, x2: f.right, y1: py, y2: py, class: 'grid' }));
    parts.push(el('text', { x: f.left - 6, y: py + 4, 'text-anchor': 'end', class: 'tick' }, text(fy(t))));
  }
  if (x) {
    const fx = x.spec.format ?? compactNumber;
    for (const t of x.scale.ticks) {
      const px = x.scale(t);
      parts.push(el('line', { x1: px, x2: px, y1: f.top, y2: f.bottom, class: 'grid' }));
      parts.push(el('text', { x: px, y: f.bottom + 16, 'text-anchor': 'middle', class: 'tick' }, text(fx(t))));
    }
    parts.push(
      el(
        'text',
        { x: (f.left + f.right) / 2, y: f.height - 8, 'text-anchor': 'middle', class: 'axis-label' },
        text(x.spec.label),
      ),
    );
  }
  parts.push(el('line', { x1: f.left, x2: f.right, y1: f.bottom, y2: f.bottom, class: 'axis' }));
  parts.push(el('line', { x1: f.left, x2: f.left, y1: f.top, y2: f.bottom, class: 'axis' }));
  const cy = (f.top + f.bottom) / 2;
  parts.push(
    el(
      'text',
      { x: 14, y: cy, transform: `rotate(-90 14 ${cy})`, 'text-anchor': 'middle', class: 'axis-label' },
      text(y.spec.label),
    ),
  );
  return el('g', { class: 'axes' }, ...parts);
}
