/**
 * Paired bootstrap resampling (Koehn, 2004) of a corpus metric's difference between two systems, as sacreBLEU's
 * `--paired-bs` runs it (sacrebleu/significance.py, `_paired_bs_test` and `estimate_ci`):
 *
 * - each system's per-segment sufficient statistics (BLEU's: ./bleu.ts {@link bleuSegmentStats}) are resampled
 *   1,000 times: a resample draws as many segment indices as the test set has, with replacement, and the SAME
 *   indices pick both systems' segments, so the two are compared on one pseudo test set at a time;
 * - each resample's score is the corpus metric of its summed statistics;
 * - the 95% interval of a score or of the difference is the 2.5th and 97.5th percentiles of the resampled values,
 *   indices n/40 and n − n/40 − 1 of the sorted values (sacreBLEU's `estimate_ci`; the 26th and 975th of 1,000);
 * - the p-value is sacreBLEU's: the resampled absolute differences, shifted to mean 0, are the null distribution,
 *   and p = (c + 1) / (n + 1) where c counts those above the whole test set's absolute difference.
 *
 * The indices come from frost's seeded generator (core/random.ts), not numpy's: an interval is reproducible from
 * its seed, and estimates what `sacrebleu --paired-bs` estimates, but is not its draws, so the last digit of a
 * bound can differ from sacreBLEU's. sacreBLEU does not print the difference's interval; frost takes it from the
 * same resamples and the same percentiles as each system's.
 *
 * Isomorphic: no Node APIs.
 */
import { SeededRandom } from '../random.ts';
import { type BleuOptions, bleuFromStats, bleuSegmentStats } from './bleu.ts';

/** Per-segment statistics of one system: `count` rows of `width` values, row-major. */
export interface SegmentStats {
  readonly width: number;
  readonly count: number;
  readonly rows: Float64Array;
}

/** The corpus score of summed statistics (one row's worth of values, summed over the segments drawn). */
export type StatsScore = (sums: Float64Array) => number;

/**
 * sacreBLEU's defaults: 1,000 resamples, `SACREBLEU_SEED`'s 12345. The interval is always 95%, as sacreBLEU's
 * `estimate_ci` takes it: 1/40 of the sorted resamples off each end.
 */
export const PAIRED_BOOTSTRAP_DEFAULTS = { resamples: 1000, seed: 12345 } as const;

export interface PairedBootstrapOptions {
  /**
   * Resamples of the test set.
   * @default 1000
   */
  resamples?: number;
  /**
   * Seed of the generator that draws the segment indices (frost's, core/random.ts).
   * @default 12345
   */
  seed?: number;
}

/** One system's score on the whole test set, and over the resamples: their mean and 95% interval. */
export interface ScoreInterval {
  score: number;
  mean: number;
  lo: number;
  hi: number;
}

export interface PairedBootstrap {
  /** System minus baseline on the whole test set. */
  delta: number;
  /** The 95% interval of the difference (system − baseline) over the resamples. */
  lo: number;
  hi: number;
  /** sacreBLEU's paired-bootstrap p-value (see the file's comment); at least 1 / (resamples + 1). */
  p: number;
  system: ScoreInterval;
  baseline: ScoreInterval;
  resamples: number;
  seed: number;
  /** Segments in the test set. */
  segments: number;
}

function checkStats(name: string, s: SegmentStats): void {
  if (!Number.isInteger(s.width) || s.width <= 0 || s.rows.length !== s.width * s.count)
    throw new RangeError(
      `'${name}' must hold count × width statistics, got ${s.rows.length} for ${s.count} × ${s.width}`,
    );
}

/** Column sums of every row. */
function totals(s: SegmentStats): Float64Array {
  const sums = new Float64Array(s.width);
  for (let i = 0; i < s.rows.length; i++) sums[i % s.width]! += s.rows[i]!;
  return sums;
}

/** The 95% interval of `values` as sacreBLEU's `estimate_ci` picks it: sorted, 1/40 of them off each end. */
function interval(values: Float64Array): { mean: number; lo: number; hi: number } {
  const sorted = Float64Array.from(values).sort();
  const n = sorted.length;
  const lower = Math.floor(n / 40);
  let sum = 0;
  for (const v of sorted) sum += v;
  return { mean: sum / n, lo: sorted[lower]!, hi: sorted[n - lower - 1]! };
}

/**
 * Paired bootstrap of `score(system) − score(baseline)`: both systems' statistics of the same test set, segment
 * for segment.
 * @throws RangeError when the two do not have the same segments and widths, or the test set is empty
 */
export function pairedBootstrap(
  system: SegmentStats,
  baseline: SegmentStats,
  score: StatsScore,
  options: PairedBootstrapOptions = {},
): PairedBootstrap {
  const resamples = options.resamples ?? PAIRED_BOOTSTRAP_DEFAULTS.resamples;
  const seed = options.seed ?? PAIRED_BOOTSTRAP_DEFAULTS.seed;
  if (!Number.isInteger(resamples) || resamples < 1)
    throw new RangeError(`'resamples' must be a positive integer, got ${resamples}`);
  checkStats('system', system);
  checkStats('baseline', baseline);
  if (system.width !== baseline.width || system.count !== baseline.count)
    throw new RangeError(
      `the systems must be scored on the same segments: ${system.count} × ${system.width} against ${baseline.count} × ${baseline.width}`,
    );
  const { width, count } = system;
  if (count === 0) throw new RangeError('a paired bootstrap needs at least one segment');

  const rng = new SeededRandom(seed, 'paired-bootstrap');
  const sys = system.rows;
  const base = baseline.rows;
  const sysSums = new Float64Array(width);
  const baseSums = new Float64Array(width);
  const sysScores = new Float64Array(resamples);
  const baseScores = new Float64Array(resamples);
  const diffs = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) {
    sysSums.fill(0);
    baseSums.fill(0);
    for (let k = 0; k < count; k++) {
      const at = rng.int(count) * width;
      for (let j = 0; j < width; j++) {
        sysSums[j]! += sys[at + j]!;
        baseSums[j]! += base[at + j]!;
      }
    }
    sysScores[b] = score(sysSums);
    baseScores[b] = score(baseSums);
    diffs[b] = sysScores[b]! - baseScores[b]!;
  }

  const sysScore = score(totals(system));
  const baseScore = score(totals(baseline));
  const delta = sysScore - baseScore;
  // sacreBLEU's _compute_p_value over |differences| shifted to mean 0, against the whole set's |difference|.
  let meanAbs = 0;
  for (const d of diffs) meanAbs += Math.abs(d);
  meanAbs /= resamples;
  let above = 0;
  for (const d of diffs) if (Math.abs(d) - meanAbs > Math.abs(delta)) above++;
  const { lo, hi } = interval(diffs);
  return {
    delta,
    lo,
    hi,
    p: (above + 1) / (resamples + 1),
    system: { score: sysScore, ...interval(sysScores) },
    baseline: { score: baseScore, ...interval(baseScores) },
    resamples,
    seed,
    segments: count,
  };
}

/** Corpus BLEU (./bleu.ts, with `options`) of summed segment statistics, for {@link pairedBootstrap}. */
export function bleuScore(options: BleuOptions = {}): StatsScore {
  return (sums) => bleuFromStats(sums, options).score;
}

/**
 * Paired bootstrap of corpus BLEU: `system` against `baseline`, each one detokenised line per segment, on the same
 * reference streams (as ./bleu.ts's `corpusBleu` takes them) with the same BLEU options.
 */
export function pairedBleuBootstrap(
  system: readonly string[],
  baseline: readonly string[],
  references: readonly (readonly (string | null | undefined)[])[],
  options: BleuOptions & PairedBootstrapOptions = {},
): PairedBootstrap {
  return pairedBootstrap(
    bleuSegmentStats(system, references, options),
    bleuSegmentStats(baseline, references, options),
    bleuScore(options),
    options,
  );
}
