/**
 * Maps data values to pixels and picks tick values a reader can take in at a glance
 * (1, 2 or 5 times a power of ten; whole decades on log axes).
 */
export interface Scale {
  (value: number): number;
  ticks: number[];
  domain: [number, number];
}

/** The step of about `count` ticks over a span: 1, 2 or 5 × 10^k. */
function niceStep(span: number, count: number): number {
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw * (1 - 1e-9))!;
}

/** Up to about `count` ticks covering [min, max] at a nice step. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!(max > min)) return [min];
  const step = niceStep(max - min, count);
  const ticks: number[] = [];
  for (let k = Math.ceil(min / step - 1e-9); k * step <= max + step * 1e-9; k++)
    ticks.push(Number((k * step).toPrecision(12)));
  return ticks;
}

/** Widens [min, max] to whole steps; a single value gets room around it. */
function niceDomain(min: number, max: number, count: number): [number, number] {
  if (min === max) {
    const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
    return niceDomain(min - pad, max + pad, count);
  }
  const step = niceStep(max - min, count);
  return [Math.floor(min / step + 1e-9) * step, Math.ceil(max / step - 1e-9) * step];
}

/**
 * A linear scale over the values, widened to nice ticks. With `zero` the domain includes 0: bar
 * lengths must start there to be read as amounts.
 */
export function linearScale(
  values: number[],
  range: [number, number],
  opts: { zero?: boolean; ticks?: number } = {},
): Scale {
  let min = Math.min(...values);
  let max = Math.max(...values);
  if (opts.zero) {
    min = Math.min(0, min);
    max = Math.max(0, max);
  }
  const domain = niceDomain(min, max, opts.ticks ?? 5);
  const [d0, d1] = domain;
  const scale = ((v: number) => range[0] + ((v - d0) / (d1 - d0)) * (range[1] - range[0])) as Scale;
  scale.ticks = niceTicks(d0, d1, opts.ticks ?? 5);
  scale.domain = domain;
  return scale;
}

/** A log10 scale over positive values, from the decade below the smallest to the decade above the largest. */
export function logScale(values: number[], range: [number, number]): Scale {
  const positive = values.filter((v) => v > 0);
  if (positive.length === 0) throw new RangeError('logScale: no positive values to place');
  const lo = Math.floor(Math.log10(Math.min(...positive)));
  let hi = Math.ceil(Math.log10(Math.max(...positive)));
  if (hi === lo) hi = lo + 1;
  const scale = ((v: number) => range[0] + ((Math.log10(v) - lo) / (hi - lo)) * (range[1] - range[0])) as Scale;
  scale.ticks = Array.from({ length: hi - lo + 1 }, (_, i) => 10 ** (lo + i));
  scale.domain = [10 ** lo, 10 ** hi];
  return scale;
}
