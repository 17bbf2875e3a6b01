import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { readCheckpointInfo, RunFolder, runPath } from '../train/run-folder.ts';

/**
 * Whether a grid's run still needs training. A run is finished when its trainer said it was done
 * (the `last` checkpoint's state), or when its last metrics line shows it used the time budget:
 * runs started by an older bench/mt-heads.ts, or killed between that line and the final save, are
 * recognised either way. Anything else with a config is resumed (`frost train --resume`), which
 * continues from the last checkpoint and counts the time already spent against the budget.
 */
export type RunStatus =
  | { kind: 'missing' }
  | { kind: 'finished'; elapsedMinutes: number; reason: string }
  | { kind: 'unfinished'; elapsedMinutes: number };

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
      throw new Error(
        `${path}:${i + 1}: not a metrics line (${parsed.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; ')})`,
      );
    return parsed.data;
  });
}

export async function runStatus(runDir: string, budgetMinutes: number): Promise<RunStatus> {
  if (!RunFolder.exists(runDir)) return { kind: 'missing' };
  const last = await readCheckpointInfo(runDir, 'last');
  const metrics = await readMetrics(runDir);
  const lastLine = metrics[metrics.length - 1];
  const elapsedMinutes = Math.max(Number(last?.state.elapsedMs ?? 0) / 60_000, lastLine?.elapsedMinutes ?? 0);
  if (last?.state.done === true && last.state.stopKind !== 'time') {
    return { kind: 'finished', elapsedMinutes, reason: String(last.state.stopReason ?? 'training finished') };
  }
  if (elapsedMinutes >= budgetMinutes - budgetTolerance(budgetMinutes)) {
    return { kind: 'finished', elapsedMinutes, reason: `time budget of ${budgetMinutes} min used` };
  }
  return { kind: 'unfinished', elapsedMinutes };
}
