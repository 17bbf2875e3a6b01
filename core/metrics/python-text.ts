/**
 * Python string semantics that the reference scorers (sacreBLEU, coco-caption) rely on, so frost
 * splits, strips and prints numbers exactly as they do.
 *
 * Isomorphic: no Node APIs.
 */

/**
 * Python's str.isspace() set, used by str.split(), str.strip() and str.rstrip(). JS `\s` differs: it
 * has U+FEFF and lacks U+001C-U+001F and U+0085.
 */
const PY_SPACE =
  '\\t\\n\\v\\f\\r\\u001c-\\u001f \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const RE_PY_SPLIT = new RegExp(`[${PY_SPACE}]+`, 'u');
const RE_PY_RSTRIP = new RegExp(`[${PY_SPACE}]+$`, 'u');
const RE_PY_LSTRIP = new RegExp(`^[${PY_SPACE}]+`, 'u');

/** Python `line.split()`: runs of whitespace separate, no empty tokens. */
export function pySplit(line: string): string[] {
  return line.split(RE_PY_SPLIT).filter((t) => t !== '');
}

/** Python `line.rstrip()`. */
export function pyRstrip(line: string): string {
  return line.replace(RE_PY_RSTRIP, '');
}

/** Python `line.strip()`. */
export function pyStrip(line: string): string {
  return line.replace(RE_PY_LSTRIP, '').replace(RE_PY_RSTRIP, '');
}

/**
 * Python's `f"{x:.{digits}f}"`. JS toFixed rounds an exact tie (e.g. 6.25 to one decimal) away from
 * zero; Python rounds it to even ("6.2"). Ties are only possible when x * 2^(digits+1) is an odd
 * integer, so we detect those and step the last digit down when it came out odd.
 */
export function formatFixed(x: number, digits: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const abs = Math.abs(x);
  let text = abs.toFixed(digits);
  const scaled = abs * 2 ** (digits + 1);
  if (Number.isInteger(scaled) && scaled % 2 === 1) {
    const n = BigInt(text.replace('.', ''));
    if (n % 2n === 1n) {
      const m = (n - 1n).toString().padStart(digits + 1, '0');
      text = digits > 0 ? `${m.slice(0, -digits)}.${m.slice(-digits)}` : m;
    }
  }
  return x < 0 || Object.is(x, -0) ? `-${text}` : text;
}
