import { type AxisSpec, drawAxes, makeFrame } from './axes.ts';
import { chartSvg, type ChartMeta } from './chart.ts';
import { drawLegend, legendRows } from './legend.ts';
import { seriesColor } from './palette.ts';
import { linearScale, logScale } from './scale.ts';
import { type Attrs, el, text } from './svg.ts';

export interface ScatterPoint {
  x: number;
  y: number;
  /** Hover text. */
  title?: string;
  /** A short label drawn beside the point (for charts with few points). */
  label?: string;
  /** Extra attributes (data-* links to the report's JSON). */
  attrs?: Attrs;
}

export interface ScatterSeries {
  name: string;
  points: ScatterPoint[];
}

export interface ScatterSpec extends Omit<ChartMeta, 'width' | 'height'> {
  x: AxisSpec;
  y: AxisSpec;
  series: ScatterSeries[];
  /** @default 640 */
  width?: number;
  /** @default 360 */
  height?: number;
  /** Point radius. @default 5 */
  radius?: number;
}

/**
 * A scatter plot, one colour per series, each series a `<g class="series" data-series=NAME>` of
 * `<circle class="point">`s carrying their values as `data-x` / `data-y`.
 */
export function scatterChart(spec: ScatterSpec): string {
  const width = spec.width ?? 640;
  const height = spec.height ?? 360;
  const rows =
    spec.series.length > 1
      ? legendRows(
          spec.series.map((s) => s.name),
          width,
        )
      : 0;
  const f = makeFrame(width, height, rows);
  const all = spec.series.flatMap((s) => s.points);
  const inset = 10; // keeps points off the axes
  const xs = all.map((p) => p.x);
  const ys = all.map((p) => p.y);
  const xRange: [number, number] = [f.left + inset, f.right - inset];
  const yRange: [number, number] = [f.bottom - inset, f.top + inset];
  const x = spec.x.log ? logScale(xs, xRange) : linearScale(xs.length ? xs : [0, 1], xRange);
  const y = spec.y.log ? logScale(ys, yRange) : linearScale(ys.length ? ys : [0, 1], yRange);
  const r = spec.radius ?? 5;
  const series = spec.series.map((s, i) =>
    el(
      'g',
      { class: 'series', 'data-series': s.name, fill: seriesColor(i) },
      ...s.points.map((p) =>
        el(
          'circle',
          { class: 'point', cx: x(p.x), cy: y(p.y), r, 'data-x': String(p.x), 'data-y': String(p.y), ...p.attrs },
          ...(p.title ? [el('title', {}, text(p.title))] : []),
        ),
      ),
    ),
  );
  const labelled = spec.series.flatMap((s) => s.points.filter((p) => p.label));
  const labels = labelled.length
    ? [
        el(
          'g',
          { class: 'point-labels' },
          ...labelled.map((p) => el('text', { x: x(p.x) + r + 3, y: y(p.y) + 4, class: 'tick' }, text(p.label!))),
        ),
      ]
    : [];
  const legend =
    rows > 0
      ? drawLegend(
          spec.series.map((s) => s.name),
          width,
          40,
          'circle',
        )
      : '';
  return chartSvg(
    { ...spec, width, height },
    legend,
    drawAxes(f, { scale: x, spec: spec.x }, { scale: y, spec: spec.y }),
    ...series,
    ...labels,
  );
}
