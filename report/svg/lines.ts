import { type AxisSpec, drawAxes, makeFrame } from './axes.ts';
import { chartSvg, type ChartMeta } from './chart.ts';
import { drawLegend, legendRows } from './legend.ts';
import { seriesColor } from './palette.ts';
import { linearScale } from './scale.ts';
import type { ScatterPoint } from './scatter.ts';
import { el, text } from './svg.ts';

export interface LineSeries {
  name: string;
  /** In x order; the line joins them in the order given. */
  points: ScatterPoint[];
  /** Palette index of the series' colour (several series may share one). @default the series' index */
  color?: number;
  /** SVG stroke-dasharray ('6 3'), so series sharing a colour stay apart; solid when absent. */
  dash?: string;
}

export interface LineSpec extends Omit<ChartMeta, 'width' | 'height'> {
  x: AxisSpec;
  y: AxisSpec;
  series: LineSeries[];
  /** @default 640 */
  width?: number;
  /** @default 380 */
  height?: number;
  /** Radius of the marks on each point. @default 2.5 */
  radius?: number;
}

/**
 * A line chart on linear axes: each series a `<g class="series" data-series=NAME>` holding one
 * `<path class="line">` through its points and a `<circle class="point">` on each, carrying its values as
 * `data-x` / `data-y` (and the point's extra attributes), as the scatter plots' points do.
 */
export function lineChart(spec: LineSpec): string {
  const width = spec.width ?? 640;
  const height = spec.height ?? 380;
  const names = spec.series.map((s) => s.name);
  const rows = spec.series.length > 1 ? legendRows(names, width) : 0;
  const f = makeFrame(width, height, rows);
  const all = spec.series.flatMap((s) => s.points);
  const inset = 10; // keeps marks off the axes
  const xs = all.map((p) => p.x);
  const ys = all.map((p) => p.y);
  const x = linearScale(xs.length ? xs : [0, 1], [f.left + inset, f.right - inset]);
  const y = linearScale(ys.length ? ys : [0, 1], [f.bottom - inset, f.top + inset]);
  const r = spec.radius ?? 2.5;
  const colorOf = (s: LineSeries, i: number) => seriesColor(s.color ?? i);
  const series = spec.series.map((s, i) => {
    const d = s.points.map((p, k) => `${k === 0 ? 'M' : 'L'}${round(x(p.x))},${round(y(p.y))}`).join('');
    return el(
      'g',
      { class: 'series', 'data-series': s.name, fill: colorOf(s, i) },
      ...(s.points.length > 0
        ? [el('path', { class: 'line', d, stroke: colorOf(s, i), 'stroke-dasharray': s.dash })]
        : []),
      ...s.points.map((p) =>
        el(
          'circle',
          { class: 'point', cx: x(p.x), cy: y(p.y), r, 'data-x': String(p.x), 'data-y': String(p.y), ...p.attrs },
          ...(p.title ? [el('title', {}, text(p.title))] : []),
        ),
      ),
    );
  });
  const legend =
    rows > 0
      ? drawLegend(
          names,
          width,
          40,
          'line',
          spec.series.map((s, i) => ({ color: colorOf(s, i), dash: s.dash })),
        )
      : '';
  return chartSvg(
    { ...spec, width, height },
    legend,
    drawAxes(f, { scale: x, spec: spec.x }, { scale: y, spec: spec.y }),
    ...series,
  );
}

/** Path coordinates with two decimals at most, as svg.ts writes attribute numbers. */
const round = (v: number) => Math.round(v * 100) / 100;
