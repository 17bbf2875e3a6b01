import { headIsFrozen } from '../../models/index.ts';
import {
  bleuStanding,
  decreaseHolds,
  decreaseReaches,
  NO_INTERVAL,
  PAPER_CLAIM,
  seedsStanding,
  type Standing,
} from './claim.ts';
import { CONVERGENCE_WINDOW, convergenceOf, isConverged } from '../../report/convergence.ts';
import { formatCount, formatFixed2, formatPercent, formatSigned2 } from '../../report/format.ts';
import { paperBleu } from '../paper/index.ts';
import { PAPER_RESULTS } from '../paper/results.ts';
import type { Report, RunReport } from '../../report/schema.ts';
import { formatMeanSd, seedGroups } from '../../report/seeds.ts';
import { pairLabel } from '../../report/tables.ts';

/**
 * One sentence per claim of the paper, generated from report.json: held, did not hold, or not settled,
 * with the numbers, and a last sentence on where frost's setting differs from the paper's. A BLEU or
 * norm claim is settled only by converged runs (report/convergence.ts): stopped by the stopping rule, or
 * stopped by an epoch cap, update or time budget with a validation curve that gained less than the claim's
 * margin in its last epochs. Runs still gaining are named with their gain. The BLEU claim is then decided by
 * each difference's 95% paired-bootstrap interval (claim.ts's `bleuStanding`), not by the difference alone: an
 * interval on both sides of the margin leaves it "not settled by this data". Runs that differ only by seed are
 * given as their mean ± standard deviation, and decide the claim only where every seed agrees.
 */
export type Verdict = 'held' | 'did not hold' | 'not settled';

export interface ClaimVerdict {
  claim: string;
  verdict: Verdict;
  sentence: string;
}

const who = (r: RunReport) => `${r.head} ${pairLabel(r)}`;

function stopSummary(runs: RunReport[]): string {
  const counts = new Map<string, number>();
  for (const r of runs) {
    const kind = r.training.stopKind ?? 'unrecorded';
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  const words: Record<string, string> = {
    plateau: 'by the stopping rule',
    epochs: 'at the epoch cap',
    time: 'at the time budget',
    updates: 'at the update budget',
    imported: 'imported (trained elsewhere)',
    unrecorded: 'for an unrecorded reason',
  };
  return [...counts].map(([k, n]) => `${n} ${words[k] ?? k}`).join(', ');
}

const GAIN_WORDS = `${PAPER_CLAIM.maxBleuLoss} validation BLEU in its last ${CONVERGENCE_WINDOW} epochs`;

/**
 * What settled a claim: how its runs converged, in words. "These runs": the claim's own, not the report's, of which
 * others may still be gaining.
 */
function settledBy(runs: RunReport[]): string {
  const kinds = new Set(runs.map((r) => convergenceOf(r.training)));
  if (!kinds.has('flat')) return 'each of these runs stopped by the stopping rule';
  if (!kinds.has('stopping rule')) return `each of these runs gained under ${GAIN_WORDS}`;
  return `each of these runs stopped by the stopping rule or gained under ${GAIN_WORDS}`;
}

/** "a gained 1.12, b gained 0.60 validation BLEU in their last 5 epochs": the runs an open claim waits for. */
export function gainingClause(gaining: readonly { who: string; gain: number | null | undefined }[], metric: string) {
  const gains = gaining.map((g) => `${g.who} gained ${formatFixed2(g.gain)}`).join(', ');
  return `${gains} validation ${metric} in ${gaining.length === 1 ? 'its' : 'their'} last ${CONVERGENCE_WINDOW} epochs`;
}

/**
 * A claim that a frozen head loses at most the margin, from its comparisons: one that converged (with its
 * baseline) beyond the margin, its whole 95% interval beyond it where it has one, refutes it whatever runs still
 * gain; otherwise it is open while any run gains (`open` says why), and then while a comparison's interval reaches
 * both sides of the margin (`uncertain` says which): not settled by this data. Settled by all of them when neither.
 * `words` is the verdict as the sentence says it.
 */
export function marginVerdict(o: {
  refuting: readonly string[];
  holds: boolean;
  open: string | null;
  uncertain?: string | null;
}): { verdict: Verdict; words: string; why: string } {
  const uncertain = o.uncertain ?? null;
  const reasons = [o.open, uncertain].filter((x) => x !== null);
  if (o.refuting.length > 0) {
    const behind = `${o.refuting.join(', ')} converged more than ${PAPER_CLAIM.maxBleuLoss} behind`;
    return {
      verdict: 'did not hold',
      words: 'did not hold',
      why: reasons.length === 0 ? '' : `: ${[behind, ...reasons].join('; ')}`,
    };
  }
  if (o.open !== null) return { verdict: 'not settled', words: 'not settled', why: `: ${reasons.join('; ')}` };
  if (uncertain !== null) return { verdict: 'not settled', words: NOT_SETTLED_BY_DATA, why: `: ${uncertain}` };
  const verdict = o.holds ? 'held' : 'did not hold';
  return { verdict, words: verdict, why: '' };
}

/** The verdict of a claim whose runs converged but whose intervals reach both sides of its line. */
export const NOT_SETTLED_BY_DATA = 'not settled by this data';

/** '[-0.21, +0.88]' */
export const formatInterval = (i: { lo: number; hi: number }) => `[${formatSigned2(i.lo)}, ${formatSigned2(i.hi)}]`;

/** One comparison of the BLEU claim, or several that differ only by seed, as its verdict sentence reads them. */
export interface Compared {
  who: string;
  /** Per seed: the difference against the baseline and its 95% interval (null: none). */
  seeds: { seed: number | undefined; delta: number; interval: { lo: number; hi: number } | null | undefined }[];
}

/** How the comparisons stand: each one's standing (the seeds' agreed one), and the open ones in words. */
export function comparedStanding(compared: readonly Compared[]): {
  standing: (c: Compared) => Standing;
  uncertain: string | null;
} {
  const standing = (c: Compared) => seedsStanding(c.seeds.map((s) => bleuStanding(s.delta, s.interval)));
  const open = compared.filter((c) => standing(c) === 'open');
  const line = formatSigned2(-PAPER_CLAIM.maxBleuLoss);
  const words = open.map((c) =>
    c.seeds.length === 1 ? `${c.who} ${formatInterval(c.seeds[0]!.interval!)}` : `${c.who}'s ${c.seeds.length} seeds`,
  );
  const uncertain =
    open.length === 0
      ? null
      : open.every((c) => c.seeds.length === 1)
        ? `the 95% interval of ${words.join(', ')} reaches both sides of ${line}`
        : `${words.join(', ')} do not all fall on one side of ${line}`;
  return { standing, uncertain };
}

/**
 * The differences as the verdict sentence gives them: each with its 95% interval, or several seeds' mean ± sd with
 * every seed's; and, when no comparison has an interval, that once at the end.
 */
export function comparedNumbers(compared: readonly Compared[]): string {
  const all = compared.flatMap((c) => c.seeds);
  const none = all.every((s) => !s.interval);
  const one = (s: Compared['seeds'][number]) =>
    `${formatSigned2(s.delta)}${none ? '' : ` ${s.interval ? formatInterval(s.interval) : `(${NO_INTERVAL})`}`}`;
  const numbers = compared.map((c) => {
    if (c.seeds.length === 1) return `${c.who} ${one(c.seeds[0]!)}`;
    const spread = formatMeanSd(
      c.seeds.map((s) => s.delta),
      formatSigned2,
    );
    const bySeed = c.seeds.map((s) => `seed ${s.seed}: ${one(s)}`).join(', ');
    return `${c.who} ${spread} over ${c.seeds.length} seeds (${bySeed})`;
  });
  return `${numbers.join(', ')}${none ? `; ${NO_INTERVAL}` : ''}`;
}

/**
 * Why a claim is not settled: the runs still gaining at their cap or budget, with their gain, and for runs
 * without a curve to judge (reports from before curves were kept) how they stopped, as before.
 */
function unsettledBecause(runs: RunReport[]): string {
  const open = runs.filter((r) => !isConverged(r));
  const gaining = open.filter((r) => convergenceOf(r.training) === 'gaining');
  const reasons: string[] = [];
  if (gaining.length > 0)
    reasons.push(
      gainingClause(
        gaining.map((r) => ({ who: who(r), gain: r.training.lastGain })),
        'BLEU',
      ),
    );
  if (gaining.length < open.length) reasons.push(`not every run stopped by the stopping rule (${stopSummary(runs)})`);
  return reasons.join('; ');
}

function bleuVerdict(report: Report): ClaimVerdict | null {
  const frozen = report.runs.filter((r) => headIsFrozen(r.head) && r.bleuDelta !== null);
  if (frozen.length === 0) return null;
  const baselineOf = (r: RunReport) => report.runs.find((b) => b.id === r.baseline);
  const involved = report.runs.filter((r) => frozen.includes(r) || frozen.some((f) => f.baseline === r.id));
  const groups = seedGroups(frozen);
  const compared = groups.map((g): Compared => ({
    who: who(g[0]!),
    seeds: g.map((r) => ({ seed: r.seed, delta: r.bleuDelta!, interval: r.bleuDeltaInterval })),
  }));
  const { standing, uncertain } = comparedStanding(compared);
  const converged = (r: RunReport) => {
    const baseline = baselineOf(r);
    return isConverged(r) && baseline !== undefined && isConverged(baseline);
  };
  const refuting = groups.filter((g, k) => standing(compared[k]!) === 'did not hold' && g.every(converged));
  const settled = involved.every(isConverged);
  const { verdict, words, why } = marginVerdict({
    refuting: refuting.map((g) => who(g[0]!)),
    holds: compared.every((c) => standing(c) === 'held'),
    open: settled ? null : unsettledBecause(involved),
    uncertain,
  });
  const intervals = frozen.some((r) => r.bleuDeltaInterval) ? ', with its 95% interval' : '';
  const basis = settled ? `; ${settledBy(involved)}` : '';
  return {
    claim: `fixed target vectors lose at most ${PAPER_CLAIM.maxBleuLoss} BLEU against learned ones`,
    verdict,
    sentence: `Fixed target vectors lose at most ${PAPER_CLAIM.maxBleuLoss} test BLEU against learned ones: ${words} (BLEU against learned${intervals}: ${comparedNumbers(compared)}${basis})${why}.`,
  };
}

/**
 * The parameter claim on the frozen heads' relative decreases, named by `who`; translation and captioning alike.
 * It holds when every decrease reaches the paper's smallest; decreases above its largest are named as such.
 */
export function decreaseVerdict(decreases: readonly { who: string; decrease: number }[]): ClaimVerdict {
  const verdict: Verdict = decreases.every((d) => decreaseReaches(d.decrease)) ? 'held' : 'did not hold';
  const { min, max } = PAPER_CLAIM.decrease;
  const numbers = decreases.map((d) => `${d.who} ${formatPercent(d.decrease)}`).join(', ');
  const above = decreases.filter((d) => decreaseReaches(d.decrease) && !decreaseHolds(d.decrease));
  const more =
    above.length === 0
      ? ''
      : `; ${above.map((d) => d.who).join(', ')} above the paper's ${max * 100}%: the output layer is a larger share of ${above.length === 1 ? 'that model' : 'those models'}`;
  return {
    claim: `fixed target vectors cut learnable parameters by at least ${min * 100}% (the paper: ${min * 100}–${max * 100}%)`,
    verdict,
    sentence: `Fixed target vectors cut the learnable parameters by at least ${min * 100}% (the paper: ${min * 100}–${max * 100}%): ${verdict} (${numbers}${more}).`,
  };
}

function paramsVerdict(report: Report): ClaimVerdict | null {
  const frozen = report.runs.filter((r) => headIsFrozen(r.head) && r.learnableDecrease !== null);
  if (frozen.length === 0) return null;
  return decreaseVerdict(frozen.map((r) => ({ who: who(r), decrease: r.learnableDecrease! })));
}

function normVerdict(report: Report): ClaimVerdict | null {
  const learned = report.runs.filter((r) => r.matrix?.kind === 'learned' && r.matrix.spearman !== null);
  if (learned.length === 0) return null;
  const rho = learned.map((r) => r.matrix!.spearman!);
  const settled = learned.every(isConverged);
  // The claim is a strong correlation: converged runs that all fall short of it (weakly positive ones too) refute it.
  const strong = rho.filter((x) => x >= PAPER_CLAIM.strongNormRho).length;
  const verdict: Verdict = !settled
    ? 'not settled'
    : strong === rho.length
      ? 'held'
      : strong === 0
        ? 'did not hold'
        : 'not settled';
  const numbers = learned.map((r) => `${who(r)} ${formatFixed2(r.matrix!.spearman)}`).join(', ');
  const paper = PAPER_RESULTS.figure2.spearman.map((x) => x.toFixed(2)).join(' / ');
  const basis = settled ? `; ${settledBy(learned)}` : '';
  const why =
    verdict === 'not settled'
      ? settled
        ? `: ${strong} of ${rho.length} runs reach ${PAPER_CLAIM.strongNormRho}`
        : `: ${unsettledBecause(learned)}`
      : '';
  return {
    claim: "learned target vectors' norms grow with word frequency",
    verdict,
    sentence: `Learned target vectors' norms correlate strongly (ρ ≥ ${PAPER_CLAIM.strongNormRho}) with word frequency, as in the paper's ${paper}: ${verdict} (Spearman ρ ${numbers}${basis})${why}.`,
  };
}

/** '20' when every value shows the same, '18–20' otherwise. */
function range(xs: number[], show: (x: number) => string): string {
  const [lo, hi] = [show(Math.min(...xs)), show(Math.max(...xs))];
  return lo === hi ? lo : `${lo}–${hi}`;
}

/** 'one seed', '3 seeds' */
export function seedCount(runs: readonly { seed?: number | undefined }[]): string {
  const seeds = new Set(runs.map((r) => r.seed));
  return seeds.size <= 1 ? 'one seed' : `${seeds.size} seeds`;
}

/** 'trained 8–12 epochs (0.33 h each on 2 cores; 2 by the stopping rule)' */
function trainedPhrase(trained: RunReport[], cores: number): string {
  const epochs = range(
    trained.map((r) => r.training.epochs),
    String,
  );
  const hours = range(
    trained.map((r) => r.training.minutes / 60),
    formatFixed2,
  );
  return `trained ${epochs} epochs (${hours} h each on ${cores} cores; ${stopSummary(trained)})`;
}

/** Where frost's setting differs from the paper's: model, training, decoding and scoring, from the data. */
function settingSentence(report: Report): string | null {
  const compared = report.runs.filter((r) => paperBleu(r) !== null);
  if (compared.length === 0) return null;
  const models = [...new Set(compared.map((r) => `${r.arch}/${r.preset}`))].join(', ');
  const learned = compared.filter((r) => r.head === 'learned');
  const size =
    learned.length > 0
      ? ` (${formatCount(learned[0]!.params.learnable)} learnable parameters with the learned head)`
      : '';
  const trained = compared.filter((r) => r.training.stopKind !== 'imported');
  const imported = compared.length - trained.length;
  const howTrained = [
    ...(trained.length > 0 ? [trainedPhrase(trained, report.machine.cores)] : []),
    ...(imported > 0 ? [`${imported === compared.length ? '' : `${imported} `}imported (trained elsewhere)`] : []),
  ].join(', ');
  const gaps = compared.map((r) => `${who(r)} ${formatFixed2(r.test.bleu)} vs ${formatFixed2(paperBleu(r))}`);
  return (
    `Where frost's setting differs: ${models}${size}, ${howTrained}, ${seedCount(compared)}, ` +
    `beam ${report.settings.beam}, and BLEU as ${PAPER_RESULTS.table2.scoring}; ` +
    `against the paper's own figures: ${gaps.join(', ')}.`
  );
}

export function claimVerdicts(report: Report): ClaimVerdict[] {
  return [bleuVerdict(report), paramsVerdict(report), normVerdict(report)].filter((v) => v !== null);
}

/** The verdict sentences and the setting sentence, in reading order. */
export function verdictSentences(report: Report): string[] {
  const setting = settingSentence(report);
  return [...claimVerdicts(report).map((v) => v.sentence), ...(setting ? [setting] : [])];
}
