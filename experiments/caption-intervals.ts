import { captionBleuStats } from '../core/metrics/caption-eval.ts';
import { cocoBleuFromStats } from '../core/metrics/coco-bleu.ts';
import { pairedBootstrap } from '../core/metrics/paired-bootstrap.ts';
import { headIsFrozen } from '../models/index.ts';
import type { CaptionRow } from './caption-results.ts';

/**
 * A caption-heads row; a run scored here has every test image's caption and the checkpoint they were decoded
 * from, a row kept from committed results has neither.
 */
export interface ScoredRow {
  row: CaptionRow;
  testCaptions?: readonly string[];
  checkpoint?: string;
}

/**
 * The rows with each frozen head's BLEU-4 interval against the `learned` row of its architecture
 * (caption-results.ts's `bleu4Interval`): the paired bootstrap of both runs' test captions against the test
 * references where both were scored here; else the interval computed before for the same two runs (a kept row's,
 * or the committed row `earlier` gives of a run scored here again, when its checkpoints are these); else null.
 * `learned` rows and rows without a `learned` beside them are left as they are.
 */
export function withBleu4Intervals(
  runs: readonly ScoredRow[],
  references: readonly (readonly string[])[],
  earlier?: (row: CaptionRow) => CaptionRow | undefined,
): CaptionRow[] {
  const stats = new Map<ScoredRow, ReturnType<typeof captionBleuStats>>();
  const statsOf = (run: ScoredRow, captions: readonly string[]) => {
    if (!stats.has(run)) stats.set(run, captionBleuStats(captions, references));
    return stats.get(run)!;
  };
  return runs.map((run) => {
    const learned = runs.find((r) => r.row.arch === run.row.arch && r.row.head === 'learned');
    if (!learned || learned === run || !headIsFrozen(run.row.head)) return run.row;
    if (run.testCaptions && learned.testCaptions && run.checkpoint && learned.checkpoint) {
      const b = pairedBootstrap(
        statsOf(run, run.testCaptions),
        statsOf(learned, learned.testCaptions),
        (sums) => 100 * cocoBleuFromStats(sums).bleu[3]!,
      );
      const checkpoints = { run: run.checkpoint, learned: learned.checkpoint };
      return {
        ...run.row,
        bleu4Interval: { lo: b.lo, hi: b.hi, p: b.p, resamples: b.resamples, seed: b.seed, checkpoints },
      };
    }
    // A kept row is the committed one, and so are the checkpoints its interval names.
    const before = run.checkpoint === undefined ? run.row.bleu4Interval : earlier?.(run.row)?.bleu4Interval;
    const same = (scored: string | undefined, recorded: string | undefined) =>
      scored === undefined || scored === recorded;
    const kept =
      before && same(run.checkpoint, before.checkpoints.run) && same(learned.checkpoint, before.checkpoints.learned)
        ? before
        : null;
    return { ...run.row, bleu4Interval: kept };
  });
}
