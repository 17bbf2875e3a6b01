import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { z } from 'zod';
import { writeFileAtomic } from '../train/atomic-write.ts';

/**
 * Measurements a report reuses: each lives in one JSON file in the run folder (`<run>/eval/...`)
 * whose name and `key` say exactly what it was computed from (checkpoint hash, beam, test set), so
 * a report regenerates in seconds and never reuses a measurement of another model.
 */
export interface CacheKey {
  [field: string]: string | number;
}

function sameKey(a: unknown, b: CacheKey): boolean {
  if (typeof a !== 'object' || a === null) return false;
  const stored = a as Record<string, unknown>;
  return Object.keys(b).length === Object.keys(stored).length && Object.entries(b).every(([k, v]) => stored[k] === v);
}

/**
 * The value cached at `path` for `key`, or `compute()`'s, written there for next time. A file that
 * is unreadable, fails `schema`, or was computed for another key is recomputed, not trusted.
 */
export async function cachedJson<T>(
  path: string,
  key: CacheKey,
  schema: z.ZodType<T>,
  compute: () => Promise<T>,
): Promise<T> {
  if (existsSync(path)) {
    try {
      const stored = JSON.parse(await readFile(path, 'utf8')) as { key?: unknown; value?: unknown };
      if (sameKey(stored.key, key)) {
        const parsed = schema.safeParse(stored.value);
        if (parsed.success) return parsed.data;
      }
    } catch {
      // A torn or foreign file is a cache miss: computing again is always correct.
    }
  }
  const value = await compute();
  await mkdir(dirname(path), { recursive: true });
  // Written whole then renamed: a report killed mid-write leaves no half file to misread.
  await writeFileAtomic(path, `${JSON.stringify({ key, value })}\n`);
  return value;
}
