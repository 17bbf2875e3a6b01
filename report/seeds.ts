import type { RunReport } from './schema.ts';

/**
 * Runs that differ only by their seed: the same architecture, preset, head and language pair. Where a report holds
 * several, its BLEU tables and the claims' verdicts give their mean ± standard deviation over the seeds.
 */

type Identity = Pick<RunReport, 'arch' | 'preset' | 'head' | 'src' | 'tgt' | 'seed'>;

const sameButSeed = (r: Identity) => JSON.stringify([r.arch, r.preset, r.head, r.src, r.tgt]);

/** `runs` grouped by everything but the seed, each group and the groups in the order of their first run. */
export function seedGroups<T extends Identity>(runs: readonly T[]): T[][] {
  const groups = new Map<string, T[]>();
  for (const r of runs) groups.set(sameButSeed(r), [...(groups.get(sameButSeed(r)) ?? []), r]);
  return [...groups.values()];
}

/** Mean and sample standard deviation (n − 1 in the denominator; 0 for a single value). */
export function meanSd(xs: readonly number[]): { mean: number; sd: number } {
  if (xs.length === 0) throw new RangeError('meanSd needs at least one value');
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (xs.length === 1) return { mean, sd: 0 };
  const ss = xs.reduce((a, x) => a + (x - mean) ** 2, 0);
  return { mean, sd: Math.sqrt(ss / (xs.length - 1)) };
}

/** '+0.21 ± 0.30': the mean as `format` writes it, the standard deviation to the same two decimals. */
export function formatMeanSd(xs: readonly number[], format: (v: number) => string): string {
  const { mean, sd } = meanSd(xs);
  return `${format(mean)} ± ${sd.toFixed(2)}`;
}

/** 'seeds 1, 2 and 3' */
export function seedList(runs: readonly Pick<RunReport, 'seed'>[]): string {
  const seeds = runs.map((r) => String(r.seed));
  return `seeds ${seeds.length === 1 ? seeds[0] : `${seeds.slice(0, -1).join(', ')} and ${seeds.at(-1)}`}`;
}
