import type { RunBudget } from '../report/run-status.ts';

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

/**
 * `frost train` flags that say where a run's files are or how long it trains, not which run it is: a moved folder
 * is the same run, and a grid given a larger budget extends its runs (side-by-side.ts gives every run the budget).
 */
const PLACE_AND_BUDGET_FLAGS: ReadonlySet<string> = new Set([
  '--data',
  '--out',
  '--image-cache',
  '--epochs',
  '--max-minutes',
  '--max-updates',
]);

/** The arguments as runs are compared by them: without PLACE_AND_BUDGET_FLAGS and their values, or `--quiet`. */
function identityOf(argv: readonly string[]): string {
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (PLACE_AND_BUDGET_FLAGS.has(argv[i]!)) i++;
    else if (argv[i] !== '--quiet') kept.push(argv[i]!);
  }
  return kept.join(' ');
}

/**
 * Refuses a folder whose run was started with other `frost train` arguments than the grid starts it with: most
 * often other `--train-flags`, which config.json's settings do not show one by one. `started` is config.json's
 * `argv`; a run from before it was recorded is not checked.
 * @throws Error naming the folder and both command lines
 */
export function refuseOtherArguments(
  runDir: string,
  started: readonly string[] | undefined,
  gridArgv: readonly string[],
): void {
  if (started === undefined || identityOf(started) === identityOf(gridArgv)) return;
  throw new Error(
    `${runDir} was started with \`frost train ${started.join(' ')}\`; this grid starts it with \`frost train ${gridArgv.join(' ')}\` (paths and budgets aside): give the grid the run's --train-flags, or choose another --out`,
  );
}

/** A budget as runs are compared by it: each kind, null where it has none, undefined where a row did not record it. */
export function budgetFields(budget: RunBudget | undefined): Record<keyof RunBudget, number | null | undefined> {
  if (budget === undefined) return { epochs: undefined, updates: undefined, minutes: undefined };
  return { epochs: budget.epochs ?? null, updates: budget.updates ?? null, minutes: budget.minutes ?? null };
}
