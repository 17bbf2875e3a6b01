import { type AxisSpec, drawAxes, makeFrame } from './axes.ts';
import { chartSvg, type ChartMeta } from './chart.ts';
import { drawLegend, legendRows } from './legend.ts';
import { seriesColor } from './palette.ts';
import { linearScale } from './scale.ts';
import { type Attrs, el, text } from './svg.ts';

export interface BarValue {
  value: number;
  attrs?: Attrs;
}

/** One stacked part, with a value for each category (bar). */
export interface BarSegment {
  name: string;
  values: BarValue[];
}

export interface StackedBarsSpec extends Omit<ChartMeta, 'width' | 'height'> {
  /** One bar per category, labelled under it. */
  categories: string[];
  segments: BarSegment[];
  y: AxisSpec;
  /** @default 640 */
  width?: number;
  /** @default 380 */
  height?: number;
}

/**
 * Vertical stacked bars: segment i is `<g class="series" data-series=NAME>` holding one
 * `<rect class="bar" data-value=...>` per bar, stacked in segment order from the axis up. Zero
 * parts are drawn with no height, so every series has one rect per bar.
 */
export function stackedBarChart(spec: StackedBarsSpec): string {
  const width = spec.width ?? Math.max(640, 90 + spec.categories.length * 70);
  const height = spec.height ?? 380;
  for (const s of spec.segments) {
    if (s.values.length !== spec.categories.length)
      throw new RangeError(
        `stackedBarChart: segment '${s.name}' has ${s.values.length} values for ${spec.categories.length} bars`,
      );
  }
  const f = makeFrame(
    width,
    height,
    legendRows(
      spec.segments.map((s) => s.name),
      width,
    ),
  );
  f.bottom -= 14; // room for slanted category labels
  const totals = spec.categories.map((_, j) => spec.segments.reduce((sum, s) => sum + s.values[j]!.value, 0));
  const y = linearScale([0, ...totals], [f.bottom, f.top + 6], { zero: true });
  const slot = (f.right - f.left) / spec.categories.length;
  const barWidth = Math.min(48, slot * 0.6);
  const base = spec.categories.map(() => 0);
  const series = spec.segments.map((s, i) =>
    el(
      'g',
      { class: 'series', 'data-series': s.name, fill: seriesColor(i) },
      ...s.values.map((v, j) => {
        const x0 = f.left + slot * j + (slot - barWidth) / 2;
        const top = y(base[j]! + v.value);
        const rect = el(
          'rect',
          {
            class: 'bar',
            x: x0,
            y: top,
            width: barWidth,
            height: y(base[j]!) - top,
            'data-value': String(v.value),
            ...v.attrs,
          },
          el('title', {}, text(`${spec.categories[j]}: ${s.name} ${v.value.toLocaleString('en')}`)),
        );
        base[j]! += v.value;
        return rect;
      }),
    ),
  );
  const labels = spec.categories.map((c, j) => {
    const cx = f.left + slot * j + slot / 2;
    return el(
      'text',
      { x: cx, y: f.bottom + 14, 'text-anchor': 'end', transform: `rotate(-20 ${cx} ${f.bottom + 14})`, class: 'tick' },
      text(c),
    );
  });
  const legend = drawLegend(
    spec.segments.map((s) => s.name),
    width,
    40,
    'square',
  );
  return chartSvg(
    { ...spec, width, height },
    legend,
    drawAxes(f, null, { scale: y, spec: spec.y }),
    ...series,
    el('g', { class: 'categories' }, ...labels),
  );
}
