import type { RunReport } from './schema.ts';

/**
 * Whether a run has converged, for the report's verdicts. The paper's stopping rule (20 epochs without a
 * validation gain) says so when it fires; a run stopped by an epoch cap, update budget or time budget says so by
 * its validation curve instead: it counts as converged when its best validation BLEU of the last
 * {@link CONVERGENCE_WINDOW} epochs is less than {@link CONVERGENCE_MARGIN} above its best before them.
 */

/**
 * The validation BLEU a run must still gain over its last epochs to count as gaining: the paper's claim's own
 * margin (experiments/claims/claim.ts's `PAPER_CLAIM.maxBleuLoss` is this number), since a run still gaining that
 * much could still move a head across the claim's line.
 */
export const CONVERGENCE_MARGIN = 0.5;

/**
 * Epochs the gain is measured over. The stopping rule's own 20 cannot fit under the 20-epoch cap this machine
 * affords; 5 validations are enough that a single noisy epoch (greedy validation BLEU moves a few tenths from
 * epoch to epoch) is not taken for progress or for a plateau, and few enough to leave most of a capped run
 * before the window.
 */
export const CONVERGENCE_WINDOW = 5;

/** One validation of a run: the epoch it ended (1-based; a partial last epoch is numbered as the one it is in). */
export interface ValBleuPoint {
  epoch: number;
  step: number;
  bleu: number;
}

/** The parts of a metrics.jsonl line the curve reads; other lines (no `valBleu`) are skipped. */
interface MetricsLine {
  epoch: number;
  step: number;
  valBleu?: unknown;
}

/**
 * The run's validation BLEU per epoch, in order, from its metrics lines up to `lastStep` (the last checkpoint's:
 * a line written after it describes work the run no longer holds). An epoch validated twice (a partial epoch
 * at a budget, then completed when a larger budget resumed it) keeps its last validation.
 */
export function validationCurve(lines: readonly MetricsLine[], lastStep = Infinity): ValBleuPoint[] {
  const byEpoch = new Map<number, ValBleuPoint>();
  for (const line of lines) {
    if (line.step > lastStep || typeof line.valBleu !== 'number' || !Number.isFinite(line.valBleu)) continue;
    byEpoch.delete(line.epoch);
    byEpoch.set(line.epoch, { epoch: line.epoch, step: line.step, bleu: line.valBleu });
  }
  return [...byEpoch.values()].sort((a, b) => a.epoch - b.epoch);
}

/**
 * Best validation BLEU over the last `window` validated epochs minus the best before them: what the run gained
 * lately (at most 0 when it did not improve on its earlier best). Null with fewer than `window` + 1 epochs,
 * when there is no "before" to compare with.
 */
export function lastGain(curve: readonly ValBleuPoint[], window = CONVERGENCE_WINDOW): number | null {
  if (curve.length < window + 1) return null;
  const best = (points: readonly ValBleuPoint[]) => Math.max(...points.map((p) => p.bleu));
  return best(curve.slice(-window)) - best(curve.slice(0, -window));
}

/**
 * How a run counts for the verdicts: 'stopping rule' (its trainer stopped it by the rule), 'flat' (stopped at
 * an epoch cap, update or time budget having gained less than the margin in its last epochs), 'gaining' (so
 * stopped but gained the margin or more), or 'unknown' (no curve long enough, as in reports from before curves
 * were kept, or no recorded budget stop).
 */
export type Convergence = 'stopping rule' | 'flat' | 'gaining' | 'unknown';

const BUDGET_STOPS = new Set(['epochs', 'updates', 'time']);

/** What convergence reads of a run's training: a report's run record, or a caption-heads row. */
export type TrainingEnd = Pick<RunReport['training'], 'stopKind' | 'lastGain'>;

export function convergenceOf(training: TrainingEnd): Convergence {
  if (training.stopKind === 'plateau') return 'stopping rule';
  const gain = training.lastGain;
  if (!training.stopKind || !BUDGET_STOPS.has(training.stopKind) || gain === null || gain === undefined)
    return 'unknown';
  return gain < CONVERGENCE_MARGIN ? 'flat' : 'gaining';
}

export const isConverged = (r: { training: TrainingEnd }): boolean => {
  const c = convergenceOf(r.training);
  return c === 'stopping rule' || c === 'flat';
};
