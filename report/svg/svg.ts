/**
 * A string builder for SVG and HTML elements: attribute values and text are escaped, so report
 * data (run names, words like "mädchen" or "<unk>") can never break the markup.
 */
export type Attrs = Record<string, string | number | undefined>;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function attrs(a: Attrs): string {
  return Object.entries(a)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${escapeXml(typeof v === 'number' ? formatCoord(v) : v!)}"`)
    .join('');
}

/** Coordinates with two decimals at most: sub-pixel precision beyond that only bloats the file. */
function formatCoord(v: number): string {
  return String(Math.round(v * 100) / 100);
}

/** An element; children are markup strings (use {@link text} for text). */
export function el(tag: string, a: Attrs = {}, ...children: string[]): string {
  return children.length === 0 ? `<${tag}${attrs(a)}/>` : `<${tag}${attrs(a)}>${children.join('')}</${tag}>`;
}

/** Escaped text content. */
export function text(s: string): string {
  return escapeXml(s);
}
