import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { MODEL_CARD_FILE, type ModelCard } from '../core/runtime/model-card.ts';
import { readModelCard } from '../core/runtime/load-node.ts';
import { exportRun } from '../export/export-run.ts';
import { type CheckpointInfo, exportedCheckpoint } from '../train/run-folder.ts';

/** Where a run's export was found or written, and the checkpoint it holds. */
export interface RunExport {
  modelDir: string;
  card: ModelCard;
  checkpoint: CheckpointInfo;
  /** Whether this call exported it (false: an up-to-date export was already there). */
  exported: boolean;
}

/**
 * Folders that may hold a run's export, in the order they are tried: `preferred` (where a new
 * export goes), the experiment layout `<parent>/artifacts/<run name>` (what `frost experiment` and
 * bench/mt-heads.ts write), and `<run>/export`, the default place to export on demand.
 */
export function exportCandidates(runDir: string, preferred?: string): string[] {
  const all = [
    ...(preferred ? [preferred] : []),
    join(dirname(runDir), 'artifacts', basename(runDir)),
    join(runDir, 'export'),
  ];
  return [...new Set(all)];
}

/** An export is current when it is a float32 export of the checkpoint `frost export` would pick now. */
function isCurrent(card: ModelCard, checkpoint: CheckpointInfo): boolean {
  const source = card.config.checkpoint as { which?: string; step?: number; epoch?: number } | undefined;
  return (
    card.precision === 'fp32' &&
    source?.which === checkpoint.which &&
    source.step === checkpoint.step &&
    source.epoch === checkpoint.epoch
  );
}

/**
 * The run's float32 export of its current checkpoint: an existing one from {@link exportCandidates},
 * or a new one written to the first candidate (`preferred`, else `<run>/export`), so a report on a
 * run that was trained further never measures the older model.
 */
export async function ensureExport(
  runDir: string,
  opts: { preferred?: string; parityTolerance?: number; log?: (line: string) => void } = {},
): Promise<RunExport> {
  const checkpoint = await exportedCheckpoint(runDir);
  const candidates = exportCandidates(runDir, opts.preferred);
  for (const dir of candidates) {
    if (!existsSync(join(dir, MODEL_CARD_FILE))) continue;
    let card: ModelCard;
    try {
      card = await readModelCard(dir);
    } catch (err) {
      // A broken export is as good as none: export again rather than refuse to report.
      opts.log?.(`ignoring ${dir}: ${(err as Error).message}`);
      continue;
    }
    if (isCurrent(card, checkpoint)) return { modelDir: dir, card, checkpoint, exported: false };
  }
  const target = opts.preferred ?? join(runDir, 'export');
  opts.log?.(`exporting ${runDir} (${checkpoint.which} checkpoint, step ${checkpoint.step}) to ${target}`);
  const { card } = await exportRun(runDir, target, {
    checkpoint: checkpoint.which,
    quiet: true,
    parityTolerance: opts.parityTolerance,
  });
  return { modelDir: target, card, checkpoint, exported: true };
}
