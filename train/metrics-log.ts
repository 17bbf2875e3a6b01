import { existsSync } from 'node:fs';
import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-write.ts';
import { RUN_FILES } from './run-config.ts';

/** Appends one epoch's metrics to the run's `metrics.jsonl`, stamped with the time it was written. */
export async function appendMetrics(runDir: string, metrics: object): Promise<void> {
  await appendFile(
    join(runDir, RUN_FILES.metrics),
    `${JSON.stringify({ time: new Date().toISOString(), ...metrics })}\n`,
  );
}

/**
 * An epoch's metrics line is written before its checkpoint is saved, so a run killed in between has a line
 * for work the checkpoint does not hold; resuming would train that epoch again and log it twice. Lines past
 * the checkpoint's step go (a new run, or one killed before its first save, keeps none).
 */
export async function dropLostMetrics(runDir: string, step: number): Promise<void> {
  const path = join(runDir, RUN_FILES.metrics);
  if (!existsSync(path)) return;
  const lines = (await readFile(path, 'utf8')).split('\n').filter((l) => l.trim() !== '');
  const kept = lines.filter((l) => {
    try {
      const lineStep = (JSON.parse(l) as { step?: unknown }).step;
      return !(typeof lineStep === 'number' && lineStep > step);
    } catch {
      return true;
    }
  });
  if (kept.length < lines.length) await writeFileAtomic(path, kept.map((l) => `${l}\n`).join(''));
}
