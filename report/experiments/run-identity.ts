import type { RunBudget } from '../run-status.ts';

/**
 * What tells a grid's runs apart, compared field by field: a run folder's config against the run the grid
 * wants (a folder of another run is refused), and a committed report's row against it (reported-runs.ts).
 */

/** A field that tells runs apart; undefined where an older report did not record it. */
export type RunField = string | number | null | undefined;

/** Training flags as runs are compared by them: one field, undefined where a row did not record them. */
export const flagsField = (flags: readonly string[] | undefined): RunField => flags?.join(' ');

/** The fields of `wanted` that `had` differs in, each side as `key=value` lists; null when none does. */
export function differingFields(
  had: Record<string, RunField>,
  wanted: Record<string, RunField>,
): { had: string; wanted: string } | null {
  const keys = Object.keys(wanted).filter((k) => had[k] !== wanted[k]);
  if (keys.length === 0) return null;
  const show = (fields: Record<string, RunField>) =>
    keys.map((k) => `${k}=${fields[k] === undefined ? 'unrecorded' : String(fields[k] ?? 'none')}`).join(', ');
  return { had: show(had), wanted: show(wanted) };
}

/** @throws Error naming the folder and what differs when the run in `runDir` is not the one the grid wants */
export function refuseOtherRun(runDir: string, had: Record<string, RunField>, wanted: Record<string, RunField>): void {
  const differs = differingFields(had, wanted);
  if (differs !== null)
    throw new Error(
      `${runDir} holds another run (${differs.had}; this grid wants ${differs.wanted}): move it away or choose another --out`,
    );
}

/** A budget as runs are compared by it: each kind, null where it has none, undefined where a row did not record it. */
export function budgetFields(budget: RunBudget | undefined): Record<keyof RunBudget, number | null | undefined> {
  if (budget === undefined) return { epochs: undefined, updates: undefined, minutes: undefined };
  return { epochs: budget.epochs ?? null, updates: budget.updates ?? null, minutes: budget.minutes ?? null };
}
