import { MISSING } from './format.ts';

/**
 * A grid that spans sessions reuses committed rows with the timings of the session that made them, on that
 * session's machine and load. Rows whose timings lie further apart than this were not timed by one command, so
 * a report says when each was, and timings are compared only among rows timed together.
 */
export const TIMED_APART_MS = 2 * 3_600_000;

/** Whether timings taken at `times` (ISO 8601; undefined: not recorded, older frost) were not all taken together. */
export function timedApart(times: readonly (string | undefined)[]): boolean {
  const ms = times.map((t) => (t === undefined ? NaN : Date.parse(t)));
  if (ms.some(Number.isNaN)) return new Set(ms.map((t) => Number.isNaN(t))).size > 1;
  return Math.max(...ms) - Math.min(...ms) > TIMED_APART_MS;
}

/** `2026-11-25 22:29` (UTC) from an ISO 8601 time; a dash when there is none. */
export const formatTimedAt = (iso: string | undefined): string => iso?.slice(0, 16).replace('T', ' ') ?? MISSING;
