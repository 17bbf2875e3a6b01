import { headIsFrozen } from '../../models/index.ts';
import { CONVERGENCE_MARGIN } from '../../report/convergence.ts';
import { PAIRED_BOOTSTRAP_DEFAULTS } from '../../core/metrics/paired-bootstrap.ts';
import { formatFixed3, formatPercent, formatSigned2, MISSING } from '../../report/format.ts';
import type { Report, RunReport } from '../../report/schema.ts';
import { formatMeanSd, meanSd, seedGroups, seedList } from '../../report/seeds.ts';
import { type Cell, pairLabel, type Table } from '../../report/tables.ts';

/**
 * The claim of the paper frost follows, as the report checks it: a frozen output layer is within
 * about 0.5 BLEU of the learned one (or better) and has 19–33% fewer learnable parameters (at least 19%: see
 * decreaseReaches); learned target vectors' norms grow with word frequency.
 */
export const PAPER_CLAIM = {
  /**
   * How much BLEU a frozen head may lose against `learned` and still match the claim (0.5); the report's convergence
   * rule reads the same margin, so it is one number, kept where report/ reads it.
   */
  maxBleuLoss: CONVERGENCE_MARGIN,
  decrease: { min: 0.19, max: 0.33 },
  /** The Spearman ρ of norm and word frequency from which the correlation is strong, as the paper's 0.84 / 0.93. */
  strongNormRho: 0.5,
} as const;

export function bleuHolds(delta: number): boolean {
  return delta >= -PAPER_CLAIM.maxBleuLoss;
}

/**
 * Where one comparison leaves the BLEU claim. From the difference's 95% interval where there is one: held when
 * the whole interval is within the margin, did not hold when the whole of it is beyond, open when it reaches both
 * sides (the data cannot tell). From the difference itself where there is none (no stored translations).
 */
export type Standing = 'held' | 'did not hold' | 'open';

export function bleuStanding(delta: number, interval: { lo: number; hi: number } | null | undefined): Standing {
  if (!interval) return bleuHolds(delta) ? 'held' : 'did not hold';
  if (bleuHolds(interval.lo)) return 'held';
  return bleuHolds(interval.hi) ? 'open' : 'did not hold';
}

/** The standing of runs that differ only by seed: theirs when they agree, open when they do not. */
export function seedsStanding(standings: readonly Standing[]): Standing {
  return standings.every((s) => s === standings[0]) ? standings[0]! : 'open';
}

/** What a report says where a comparison has no interval. */
export const NO_INTERVAL = 'no interval: hypotheses not stored';

// Rounded to 0.1% as the table shows it, so a run shown as "19.0%" is not called outside 19–33%.
const shownDecrease = (decrease: number) => Math.round(decrease * 1000) / 1000;

/** Whether a decrease is inside the paper's range, as its models saved; above it names a larger saving. */
export function decreaseHolds(decrease: number): boolean {
  const shown = shownDecrease(decrease);
  return shown >= PAPER_CLAIM.decrease.min && shown <= PAPER_CLAIM.decrease.max;
}

/**
 * Whether a decrease makes the claim's saving: at least the paper's smallest. The range's top is what the paper's
 * models saved, not a limit: a model whose output layer is a larger share of it (a larger target vocabulary)
 * saves more by freezing it, which supports the claim rather than refuting it.
 */
export function decreaseReaches(decrease: number): boolean {
  return shownDecrease(decrease) >= PAPER_CLAIM.decrease.min;
}

/** How the intervals were computed, in words. */
const BOOTSTRAP_WORDS = `${PAIRED_BOOTSTRAP_DEFAULTS.resamples.toLocaleString('en')} resamples of the test sentences, as sacreBLEU's --paired-bs, seed ${PAIRED_BOOTSTRAP_DEFAULTS.seed}`;

const STANDING_WORDS: Record<Standing, string> = { held: 'yes', 'did not hold': 'no', open: 'open' };

/**
 * One row per run of a frozen head (its definition says so) that has a `learned` baseline, with its BLEU
 * difference's 95% interval where the report has any; then, for runs that differ only by seed, one row with the
 * mean ± standard deviation over the seeds.
 */
export function claimTable(report: Report): Table | null {
  const rows: Cell[][] = [];
  const compared = report.runs
    .map((r, i) => ({ r, i }))
    .filter(({ r }) => headIsFrozen(r.head) && r.bleuDelta !== null && r.learnableDecrease !== null);
  if (compared.length === 0) return null;
  // Reports from before intervals, or without stored translations, have nothing to show in their columns.
  const intervals = compared.some(({ r }) => r.bleuDeltaInterval);
  const standing = (r: RunReport) => bleuStanding(r.bleuDelta!, r.bleuDeltaInterval);
  const yes = (ok: boolean) => ({ text: ok ? 'yes' : 'no' });
  for (const { r, i } of compared) {
    const at = (key: 'lo' | 'hi' | 'p', format: (v: number | null | undefined) => string): Cell =>
      r.bleuDeltaInterval === undefined
        ? { text: MISSING }
        : {
            text: format(r.bleuDeltaInterval?.[key]),
            path: `runs.${i}.bleuDeltaInterval${r.bleuDeltaInterval ? `.${key}` : ''}`,
          };
    rows.push([
      { text: r.id },
      { text: r.baseline ?? '' },
      { text: formatSigned2(r.bleuDelta), path: `runs.${i}.bleuDelta` },
      ...(intervals ? [at('lo', formatSigned2), at('hi', formatSigned2), at('p', formatFixed3)] : []),
      { text: STANDING_WORDS[standing(r)] },
      { text: formatPercent(r.learnableDecrease), path: `runs.${i}.learnableDecrease` },
      yes(decreaseReaches(r.learnableDecrease!)),
    ]);
  }
  for (const group of seedGroups(compared.map(({ r }) => r)).filter((g) => g.length > 1)) {
    const decrease = meanSd(group.map((r) => r.learnableDecrease!)).mean;
    rows.push([
      { text: `${group[0]!.head} ${pairLabel(group[0]!)}, ${seedList(group)}` },
      { text: 'mean ± sd' },
      {
        text: formatMeanSd(
          group.map((r) => r.bleuDelta!),
          formatSigned2,
        ),
      },
      ...(intervals ? [{ text: '' }, { text: '' }, { text: '' }] : []),
      { text: STANDING_WORDS[seedsStanding(group.map(standing))] },
      { text: formatPercent(decrease) },
      yes(decreaseReaches(decrease)),
    ]);
  }
  return {
    id: 'claim',
    title: "The paper's claim on this machine",
    note:
      `Frozen output layers: test BLEU within ${PAPER_CLAIM.maxBleuLoss} of the learned head (or better), and at least ${PAPER_CLAIM.decrease.min * 100}% fewer learnable parameters (the paper: ${PAPER_CLAIM.decrease.min * 100}–${PAPER_CLAIM.decrease.max * 100}%). Equal training budgets compare models at the same cost, not at convergence.` +
      (intervals
        ? ` The 95% interval and p are the paired bootstrap of the difference (${BOOTSTRAP_WORDS}); within ${PAPER_CLAIM.maxBleuLoss}: yes when the whole interval is, no when none of it is, open when it reaches both sides. A dash: ${NO_INTERVAL}; the difference itself decides.`
        : ` No run has a 95% interval (${NO_INTERVAL}): the difference itself decides.`) +
      (rows.length > compared.length
        ? ' Runs that differ only by seed get a row more: the mean ± standard deviation of the difference over the seeds, and yes or no only when every seed says so.'
        : ''),
    header: [
      'run',
      'baseline',
      'BLEU vs learned',
      ...(intervals ? ['95% low', '95% high', 'p'] : []),
      `within ${PAPER_CLAIM.maxBleuLoss}`,
      'fewer learnable',
      `at least ${PAPER_CLAIM.decrease.min * 100}%`,
    ],
    numeric: [false, false, true, ...(intervals ? [true, true, true] : []), false, true, false],
    rows,
  };
}
