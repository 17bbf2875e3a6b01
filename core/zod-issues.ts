import type { z } from 'zod';

export interface IssueStyle {
  /** Names an issue with the value itself (no path). @default '(root)' */
  whole?: string;
  /** Name only the first few issues of a file with many bad entries, counting the rest. @default all */
  max?: number;
  /** Array indices as `images[0].split` (a file's layout) rather than `texts.1` (a request's fields). */
  bracketed?: boolean;
}

/** A field path as an issue names it. */
function fieldPath(path: readonly PropertyKey[], bracketed: boolean): string {
  if (!bracketed) return path.map(String).join('.');
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i > 0 ? '.' : ''}${String(p)}`)).join('');
}

/**
 * zod's issues as one line naming each offending field (`texts.1: must be a non-empty string; beam: …`): how a
 * refused file or request says what is wrong with it.
 */
export function describeIssues(
  issues: readonly z.core.$ZodIssue[],
  { whole = '(root)', max = Infinity, bracketed = false }: IssueStyle = {},
): string {
  const named = issues
    .slice(0, max)
    .map((i) => `${i.path.length > 0 ? fieldPath(i.path, bracketed) : whole}: ${i.message}`);
  return `${named.join('; ')}${issues.length > max ? ` (and ${issues.length - max} more)` : ''}`;
}
