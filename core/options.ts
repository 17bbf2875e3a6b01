import type { z } from 'zod';

/**
 * A strict zod object (`z.strictObject`) for a component's options: every field with its type and
 * default, unknown keys refused. Output heads and architectures declare one each.
 */
export type OptionsSchema<T extends object> = z.ZodType<T> & { readonly shape: Readonly<Record<string, unknown>> };

/**
 * Parses options against their schema, defaults filled in.
 * @param where What the options belong to, for the message: `head 'fixed-uniform'`.
 * @param noun What one option is called there (`setting` for an architecture's).
 * @throws RangeError with one line naming the allowed keys (for an unknown key) or the expected
 * type (for a wrong value), e.g. "head 'fixed-uniform': unknown option 'limt' (options: limit)"
 */
export function parseOptions<T extends object>(
  schema: OptionsSchema<T>,
  value: unknown,
  where: string,
  noun = 'option',
): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const allowed = Object.keys(schema.shape);
    const keys = issue.keys.map((k) => `'${k}'`).join(', ');
    const known = allowed.length > 0 ? `${noun}s: ${allowed.join(', ')}` : `it takes no ${noun}s`;
    throw new RangeError(`${where}: unknown ${noun}${issue.keys.length > 1 ? 's' : ''} ${keys} (${known})`);
  }
  const received = valueAt(value, issue.path);
  const key = issue.path.map(String).join('.');
  throw new RangeError(
    `${where}: ${noun} '${key}' ${describeIssue(issue)}, got ${JSON.stringify(received) ?? String(received)}`,
  );
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type')
    return `expects ${issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`}`;
  if (issue.code === 'too_small') return `must be ${issue.inclusive ? '>=' : '>'} ${String(issue.minimum)}`;
  if (issue.code === 'too_big') return `must be ${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}`;
  // A schema's own check (superRefine) words its message for this line, setting names in their case.
  if (issue.code === 'custom') return issue.message;
  return issue.message.replace(/^Invalid input: /, '').toLowerCase();
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let v = value;
  for (const key of path)
    v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[key] : undefined;
  return v;
}
