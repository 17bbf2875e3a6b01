/**
 * Checks that what a report shows equals its report.json: a table cell's text, read back as a
 * number, must match the value at its `data-path` to the precision shown.
 */
import assert from 'node:assert/strict';

/** The value at a dotted path ('runs.1.test.bleu') of parsed report.json. */
export function valueAt(data: unknown, path: string): unknown {
  let v = data;
  for (const key of path.split('.')) {
    assert.ok(v !== null && typeof v === 'object' && key in v, `report.json has no ${path} (stopped at '${key}')`);
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

// Counted units (a budget of '60.0 min', '2,400 updates', '20 epochs') are shown as stored.
const UNITS: Record<string, number> = {
  '': 1,
  '%': 0.01,
  B: 1,
  kB: 1e3,
  MB: 1e6,
  ms: 1,
  min: 1,
  updates: 1,
  epochs: 1,
};

/**
 * A shown number as a value and the half-width of the interval its rounding covers:
 * '1,234' → 1234 ± 0.5, '28.2%' → 0.282 ± 0.0005, '1.11 MB' → 1.11e6 ± 5e3, '–' → null.
 */
export function readShown(text: string): { value: number; tolerance: number } | null {
  const t = text.trim();
  if (t === '–') return null;
  const m = /^([+-]?)([\d,]+)(?:\.(\d+))?\s*(%|B|kB|MB|ms|min|updates|epochs)?$/.exec(t);
  assert.ok(m, `'${text}' is not a number as the report shows them`);
  const unit = UNITS[m[4] ?? '']!;
  const decimals = m[3]?.length ?? 0;
  const value = Number(`${m[1]}${m[2]!.replace(/,/g, '')}.${m[3] ?? '0'}`) * unit;
  return { value, tolerance: 0.5 * 10 ** -decimals * unit * (1 + 1e-9) };
}

/** Asserts the cell's text shows the JSON value at `path`. */
export function assertShows(data: unknown, path: string, text: string): void {
  const json = valueAt(data, path);
  const shown = readShown(text);
  if (json === null) {
    assert.equal(shown, null, `${path} is null in report.json, the report shows '${text}'`);
    return;
  }
  assert.equal(typeof json, 'number', `${path} is not a number in report.json`);
  assert.ok(shown, `${path} = ${String(json)} in report.json, the report shows '${text}'`);
  assert.ok(
    Math.abs(shown.value - (json as number)) <= shown.tolerance,
    `${path} = ${String(json)} in report.json, the report shows '${text}'`,
  );
}
