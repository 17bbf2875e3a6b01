import { bleuScore, pairedBootstrap } from '../core/metrics/paired-bootstrap.ts';
import type { CollectedRun } from './collect-run.ts';
import type { TestSegments } from './collect-test.ts';
import type { BleuInterval, RunReport } from './schema.ts';

/** The BLEU the intervals resample: `test.bleu`'s, lower-cased (collect-test.ts). */
const BLEU_OPTIONS = { lowercase: true } as const;

/** What a report's comparisons have of its runs' test translations, and of their earlier rows. */
export interface ComparisonInputs {
  /** The runs' test BLEU statistics, by run id: the runs whose folders the report read. */
  segments?: ReadonlyMap<string, TestSegments>;
  /**
   * A run's row in the report this one replaces (a grid's committed report), by run id: its interval stands when it
   * was computed for the same two checkpoints, so a rerun whose baseline's folder is gone keeps it.
   */
  earlier?: (id: string) => RunReport | undefined;
}

/** Whether `row` describes the same test translations as `run`: the same checkpoint decoded the same way. */
const sameTranslations = (row: RunReport, run: CollectedRun) =>
  row.checkpoint.sha256 === run.checkpoint.sha256 &&
  row.test.beam === run.test.beam &&
  row.test.split === run.test.split &&
  row.test.sentences === run.test.sentences;

/**
 * `bleuDelta`'s interval: the paired bootstrap (core/metrics/paired-bootstrap.ts, 1,000 resamples, seed 12345) of
 * the run's test translations against its baseline's, when the report has both runs' sentences on the same test
 * set; else the interval computed before for the same two checkpoints (a row taken from a committed report, or the
 * committed row of a run whose folder is here); else null. The baseline itself has none.
 */
export function bleuInterval(
  run: CollectedRun,
  base: CollectedRun,
  inputs: ComparisonInputs = {},
): BleuInterval | null {
  if (run.id === base.id) return null;
  const mine = inputs.segments?.get(run.id);
  const theirs = inputs.segments?.get(base.id);
  if (mine && theirs && mine.testSet === theirs.testSet) {
    const b = pairedBootstrap(mine.stats, theirs.stats, bleuScore(BLEU_OPTIONS));
    return {
      lo: b.lo,
      hi: b.hi,
      p: b.p,
      run: { lo: b.system.lo, hi: b.system.hi },
      baseline: { lo: b.baseline.lo, hi: b.baseline.hi },
      resamples: b.resamples,
      seed: b.seed,
      baselineCheckpoint: base.checkpoint.sha256,
    };
  }
  const row = inputs.earlier?.(run.id);
  const before = run.bleuDeltaInterval ?? (row && sameTranslations(row, run) ? row.bleuDeltaInterval : undefined);
  return before && before.baselineCheckpoint === base.checkpoint.sha256 ? before : null;
}
