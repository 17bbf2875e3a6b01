/** Number formatting for the page: one place, so every figure reads the same way. */

const integer = new Intl.NumberFormat('en-US');

/** `1234567` → `1,234,567`. */
export function formatCount(n: number): string {
  return integer.format(n);
}

/** Bytes in the largest unit that keeps the number ≥ 1 (`14.2 MB`); decimal units, as browsers show downloads. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

/** Milliseconds with a precision that suits their size: `0.84 ms`, `12.3 ms`, `1,204 ms`. */
export function formatMs(ms: number): string {
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 100) return `${ms.toFixed(1)} ms`;
  return `${formatCount(Math.round(ms))} ms`;
}
