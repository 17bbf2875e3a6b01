import type { z } from 'zod';

/**
 * zod's issues as one line naming each offending field (`texts.1: must be a non-empty string; beam: …`): how a
 * refused file or request says what is wrong with it. `whole` names an issue with the value itself (no path);
 * `max` keeps a file with many bad entries to its first few, counting the rest.
 */
export function describeIssues(
  issues: readonly z.core.$ZodIssue[],
  { whole = '(root)', max = Infinity }: { whole?: string; max?: number } = {},
): string {
  const named = issues
    .slice(0, max)
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : whole}: ${i.message}`);
  return `${named.join('; ')}${issues.length > max ? ` (and ${issues.length - max} more)` : ''}`;
}
