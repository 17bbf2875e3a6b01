import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { describeIssues } from '../core/zod-issues.ts';
import { readCheckpointInfo, RunFolder, runPath } from '../train/run-folder.ts';
import { type StopKind, stopKindSchema } from './schema.ts';

/**
 * Whether a grid's run still needs training. A run is finished when
 * - its trainer stopped it by the stopping rule (`stopKind: 'plateau'`: `schedule.stopAfter` epochs without a
 *   validation gain; final, no budget lifts it), or said it was done before stop kinds were recorded;
 * - it has made the grid's number of updates (`budget.updates`, the `last` checkpoint's step);
 * - it has trained the grid's epoch cap (`budget.epochs`, counted in complete epochs of the `last` checkpoint);
 * - its last metrics line or checkpoint shows it used the grid's time budget (`budget.minutes`): runs started by
 *   an older bench/mt-heads.ts, or killed between that line and the final save, are recognised either way.
 * Anything else with a config is resumed (`frost train --resume`), which continues from the last checkpoint
 * (mid-epoch when one was saved inside the epoch) and counts the time and epochs already spent.
 */
export type RunStatus =
  | { kind: 'missing' }
  | { kind: 'finished'; elapsedMinutes: number; reason: string }
  | { kind: 'unfinished'; elapsedMinutes: number };

/**
 * What a grid trains each run for: a time budget, an epoch cap, both (whichever comes first), or neither
 * (until the stopping rule). A number is a time budget in minutes.
 */
export interface RunBudget {
  minutes?: number;
  epochs?: number;
  /** Optimizer updates (`frost train --max-updates`): the budget that does not depend on the machine's load. */
  updates?: number;
}

/** The trainer's record of why it stopped, when it did (older checkpoints lack the kind). */
export function stopKindOf(state: Record<string, unknown>): StopKind | null {
  const kind = stopKindSchema.safeParse(state.stopKind);
  return state.done === true && kind.success ? kind.data : null;
}

/** Budget time a run may fall short of and still count as finished (rounding of saved times). */
function budgetTolerance(budgetMinutes: number): number {
  return Math.max(0.01, budgetMinutes * 0.005);
}

const metricsLineSchema = z.looseObject({
  epoch: z.number(),
  step: z.number(),
  elapsedMinutes: z.number(),
  complete: z.boolean(),
});
export type MetricsLine = z.infer<typeof metricsLineSchema>;

/**
 * The parsed lines of `metrics.jsonl` (empty when there is none yet).
 * @throws Error naming the file and line when a line is not a metrics record
 */
export async function readMetrics(runDir: string): Promise<MetricsLine[]> {
  const path = runPath(runDir, 'metrics');
  if (!existsSync(path)) return [];
  const lines = (await readFile(path, 'utf8')).split('\n').filter((l) => l.trim() !== '');
  return lines.map((line, i) => {
    let parsed;
    try {
      parsed = metricsLineSchema.safeParse(JSON.parse(line));
    } catch (err) {
      throw new Error(`${path}:${i + 1}: not JSON (${(err as Error).message})`, { cause: err });
    }
    if (!parsed.success)
      throw new Error(`${path}:${i + 1}: not a metrics line (${describeIssues(parsed.error.issues)})`);
    return parsed.data;
  });
}

export async function runStatus(runDir: string, budget: number | RunBudget): Promise<RunStatus> {
  const { minutes, epochs, updates } =
    typeof budget === 'number' ? { minutes: budget, epochs: undefined, updates: undefined } : budget;
  if (!RunFolder.exists(runDir)) return { kind: 'missing' };
  const last = await readCheckpointInfo(runDir, 'last');
  const metrics = await readMetrics(runDir);
  const lastLine = metrics[metrics.length - 1];
  const elapsedMinutes = Math.max(Number(last?.state.elapsedMs ?? 0) / 60_000, lastLine?.elapsedMinutes ?? 0);
  const done = last?.state.done === true;
  const stopKind = last?.state.stopKind;
  const reason = String(last?.state.stopReason ?? 'training finished');
  // The stopping rule is final; a run that stopped before stop kinds were recorded is too.
  if (done && (stopKind === 'plateau' || stopKind === undefined)) return { kind: 'finished', elapsedMinutes, reason };
  if (epochs !== undefined && (last?.epoch ?? 0) >= epochs)
    return {
      kind: 'finished',
      elapsedMinutes,
      reason: done && stopKind === 'epochs' ? reason : `reached ${epochs} epochs`,
    };
  if (updates !== undefined && Number(last?.state.step ?? 0) >= updates)
    return {
      kind: 'finished',
      elapsedMinutes,
      reason: done && stopKind === 'updates' ? reason : `reached ${updates} updates`,
    };
  // A run's own epoch cap counts as finished when the grid sets none (a grid's larger cap resumes it).
  if (done && stopKind === 'epochs' && epochs === undefined) return { kind: 'finished', elapsedMinutes, reason };
  if (minutes !== undefined && elapsedMinutes >= minutes - budgetTolerance(minutes)) {
    return { kind: 'finished', elapsedMinutes, reason: `time budget of ${minutes} min used` };
  }
  return { kind: 'unfinished', elapsedMinutes };
}
