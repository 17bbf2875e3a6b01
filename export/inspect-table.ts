/** Plain-text tables and number formats for `frost inspect`. */

/** Column alignment: numbers read best right-aligned. */
export type Align = 'left' | 'right';

/**
 * Lays out rows (the first is the header) in columns two spaces apart, with a rule under the
 * header. Returns the lines without trailing spaces.
 */
export function formatTable(rows: readonly (readonly string[])[], align: readonly Align[] = []): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) =>
        (align[i] ?? (i === 0 ? 'left' : 'right')) === 'left' ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!),
      )
      .join('  ')
      .trimEnd();
  if (rows.length === 0) return [];
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)];
}

/** Bytes in binary units: `812 B`, `41.3 KiB`, `1.85 MiB`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${units[u]}`;
}

/** An integer with thousands separators: `1,234,567`. */
export function formatCount(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** `part` as a percentage of `whole` (one decimal), '-' when whole is 0. */
export function formatShare(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : '-';
}
