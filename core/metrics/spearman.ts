/**
 * Spearman's rank correlation, as scipy.stats.spearmanr computes it: the Pearson correlation of the
 * two variables' ranks, where tied values share the average of the ranks they span. Reports use it
 * to compare target-vector norms with word frequencies (Figure 2 of the paper frost follows).
 *
 * Isomorphic: no Node APIs.
 */

type Numbers = ArrayLike<number>;

/**
 * 1-based ranks of `values`, ties given the mean of the ranks they occupy ([10, 20, 20, 30] →
 * [1, 2.5, 2.5, 4]).
 * @throws RangeError when a value is NaN (it has no rank)
 */
export function averageRanks(values: Numbers): Float64Array {
  const n = values.length;
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < n; i++) if (Number.isNaN(values[i])) throw new RangeError(`averageRanks: values[${i}] is NaN`);
  order.sort((a, b) => values[a] - values[b]);
  const ranks = new Float64Array(n);
  for (let start = 0; start < n;) {
    let end = start + 1;
    while (end < n && values[order[end]] === values[order[start]]) end++;
    // Positions start..end-1 hold equal values: ranks start+1..end, whose mean is (start+1+end)/2.
    const rank = (start + 1 + end) / 2;
    for (let k = start; k < end; k++) ranks[order[k]] = rank;
    start = end;
  }
  return ranks;
}

/**
 * Pearson's correlation coefficient. NaN when either variable is constant (the correlation is
 * undefined), as in scipy.
 * @throws RangeError when the lengths differ or there are fewer than two pairs
 */
export function pearson(x: Numbers, y: Numbers): number {
  if (x.length !== y.length) throw new RangeError(`pearson: x has ${x.length} values, y has ${y.length}`);
  const n = x.length;
  if (n < 2) throw new RangeError(`pearson: needs at least 2 pairs, got ${n}`);
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = x[i] - mx;
    const dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx === 0 || syy === 0) return NaN;
  // Rounding can push a perfect correlation a hair past ±1.
  return Math.max(-1, Math.min(1, sxy / Math.sqrt(sxx * syy)));
}

/** Spearman's ρ of paired samples: {@link pearson} of their {@link averageRanks}. */
export function spearman(x: Numbers, y: Numbers): number {
  if (x.length !== y.length) throw new RangeError(`spearman: x has ${x.length} values, y has ${y.length}`);
  return pearson(averageRanks(x), averageRanks(y));
}
