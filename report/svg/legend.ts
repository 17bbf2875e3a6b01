import { seriesColor } from './palette.ts';
import { el, text } from './svg.ts';

/** Legend entries are laid out by an estimate of their text width: SVG cannot measure text. */
const CHAR_WIDTH = 6.2;
const KEY_WIDTH = 14;
const GAP = 18;
const ROW_HEIGHT = 18;
const LEFT = 64;

/** Each entry's row and x offset, wrapping at the chart's width. */
function place(names: string[], width: number): { row: number; x: number }[] {
  let row = 0;
  let x = LEFT;
  return names.map((name) => {
    const w = KEY_WIDTH + name.length * CHAR_WIDTH + GAP;
    if (x > LEFT && x + w > width - 8) {
      row++;
      x = LEFT;
    }
    const at = { row, x };
    x += w;
    return at;
  });
}

/** How many rows a legend of these entries takes in a chart `width` wide. */
export function legendRows(names: string[], width: number): number {
  const spots = place(names, width);
  return spots.length === 0 ? 0 : spots[spots.length - 1]!.row + 1;
}

/** A legend entry's key when it is not series i's plain colour: a line chart's colour and dash pattern. */
export interface LegendKey {
  color: string;
  /** SVG stroke-dasharray ('6 3'); solid when absent. */
  dash?: string;
}

/**
 * Colour keys in rows under the title; entry i has colour seriesColor(i), or `keys[i]`'s colour (and, for
 * lines, its dash pattern).
 */
export function drawLegend(
  names: string[],
  width: number,
  top: number,
  shape: 'circle' | 'square' | 'line',
  keys?: LegendKey[],
): string {
  const spots = place(names, width);
  const items = names.map((name, i) => {
    const { row, x } = spots[i]!;
    const y = top + row * ROW_HEIGHT;
    const color = keys?.[i]?.color ?? seriesColor(i);
    const key =
      shape === 'circle'
        ? el('circle', { cx: x + 5, cy: y - 4, r: 5, fill: color })
        : shape === 'square'
          ? el('rect', { x, y: y - 9, width: 10, height: 10, fill: color })
          : el('line', {
              x1: x - 2,
              x2: x + 11,
              y1: y - 4,
              y2: y - 4,
              stroke: color,
              'stroke-width': 2,
              'stroke-dasharray': keys?.[i]?.dash,
            });
    return el('g', { class: 'legend-item' }, key, el('text', { x: x + KEY_WIDTH, y, class: 'legend' }, text(name)));
  });
  return el('g', { class: 'legend' }, ...items);
}
