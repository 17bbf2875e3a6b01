import { headIsFrozen } from '../../models/index.ts';
import type { CaptionRow } from '../caption-results.ts';
import { PAPER_CLAIM } from './claim.ts';
import { convergenceOf, isConverged } from '../../report/convergence.ts';
import { formatCount, formatPercent } from '../../report/format.ts';
import { PAPER_RESULTS } from '../paper/results.ts';
import {
  type ClaimVerdict,
  type Compared,
  comparedNumbers,
  comparedStanding,
  decreaseVerdict,
  gainingClause,
  marginVerdict,
  seedCount,
  type Verdict,
} from './verdicts.ts';

/**
 * The captioning claims of the paper frost follows, judged on a caption-heads grid's rows as verdicts.ts
 * judges the translation ones and with the same rules: held, did not hold, or not settled, with the numbers. A score
 * claim is settled only by runs that converged (the stopping rule, or a budget stop after a flat validation curve),
 * or refuted by a converged comparison beyond the margin; runs still gaining are named with their gain. The BLEU-4
 * claim is decided by each difference's 95% paired-bootstrap interval where the row has one (`bleu4Interval`), and
 * is not settled by this data when an interval reaches both sides of the margin. Then where frost's setting differs
 * from the paper's.
 */

/** A frozen head's row beside the `learned` row of the same architecture. */
interface Comparison {
  learned: CaptionRow;
  fixed: CaptionRow;
}

const who = (r: CaptionRow) => `${r.arch} ${r.head}`;

function comparisons(rows: readonly CaptionRow[]): Comparison[] {
  return rows.flatMap((fixed) => {
    const learned = rows.find((r) => r.arch === fixed.arch && r.head === 'learned');
    return learned && headIsFrozen(fixed.head) ? [{ learned, fixed }] : [];
  });
}

const converged = (r: CaptionRow) => isConverged({ training: r });

/** Why the runs behind a claim leave it open, or null when each of them converged. */
function unsettled(compared: readonly Comparison[]): string | null {
  const runs = [...new Set(compared.flatMap((c) => [c.learned, c.fixed]))];
  const open = runs.filter((r) => !converged(r));
  if (open.length === 0) return null;
  const gaining = open.filter((r) => convergenceOf(r) === 'gaining');
  const unknown = open.filter((r) => !gaining.includes(r));
  return [
    ...(gaining.length > 0
      ? [
          gainingClause(
            gaining.map((r) => ({ who: who(r), gain: r.lastGain })),
            'BLEU-4',
          ),
        ]
      : []),
    ...(unknown.length > 0 ? [`${unknown.map(who).join(', ')} without a validation curve long enough to judge`] : []),
  ].join('; ');
}

/**
 * A claim that fixed vectors raise a count: held when every comparison shows it, did not hold when none does,
 * not settled when they disagree or a run had not converged.
 */
function directionVerdict(compared: readonly Comparison[], raised: (c: Comparison) => boolean): [Verdict, string] {
  const open = unsettled(compared);
  if (open !== null) return ['not settled', `: ${open}`];
  const k = compared.filter(raised).length;
  if (k === compared.length) return ['held', ''];
  if (k === 0) return ['did not hold', ''];
  return ['not settled', `: ${k} of ${compared.length} models show it`];
}

function vocabularyVerdict(compared: readonly Comparison[]): ClaimVerdict {
  const [verdict, why] = directionVerdict(
    compared,
    (c) => c.fixed.scores.vocab.distinctWords > c.learned.scores.vocab.distinctWords,
  );
  const { learned, fixed } = PAPER_RESULTS.table1.vocabularyUsage;
  const numbers = compared
    .map((c) => `${who(c.fixed)} ${c.learned.scores.vocab.distinctWords} → ${c.fixed.scores.vocab.distinctWords}`)
    .join(', ');
  return {
    claim: 'captioners with fixed target vectors use more of the vocabulary',
    verdict,
    sentence:
      `Captioners with fixed target vectors use more of the vocabulary than with learned ones (the paper: ` +
      `${formatCount(learned)} → ${formatCount(fixed)} distinct words on ${PAPER_RESULTS.table1.data}): ${verdict} ` +
      `(distinct words in the test captions, learned → fixed: ${numbers})${why}.`,
  };
}

function rareWordVerdict(compared: readonly Comparison[]): ClaimVerdict | null {
  const shares = compared.map((c) => [c.learned.scores.vocab.rare, c.fixed.scores.vocab.rare] as const);
  if (shares.some(([a, b]) => a === undefined || b === undefined)) return null;
  const share = (r: CaptionRow) => r.scores.vocab.rare!.share;
  const [verdict, why] = directionVerdict(compared, (c) => share(c.fixed) > share(c.learned));
  const threshold = compared[0]!.fixed.scores.vocab.rare!.threshold;
  const numbers = compared
    .map((c) => `${who(c.fixed)} ${formatPercent(share(c.learned))} → ${formatPercent(share(c.fixed))}`)
    .join(', ');
  return {
    claim: 'captioners with fixed target vectors use more rare words',
    verdict,
    sentence:
      `They use more rare words (fewer than ${threshold} occurrences in the training captions): ${verdict} ` +
      `(share of the generated words, learned → fixed: ${numbers})${why}.`,
  };
}

function bleuVerdict(compared: readonly Comparison[]): ClaimVerdict {
  const delta = (c: Comparison) => 100 * (c.fixed.scores.bleu4 - c.learned.scores.bleu4);
  // One grid, one seed: each comparison is one run against one baseline.
  const numbers = compared.map((c): Compared => ({
    who: who(c.fixed),
    seeds: [{ seed: c.fixed.seed, delta: delta(c), interval: c.fixed.bleu4Interval }],
  }));
  const { standing, uncertain } = comparedStanding(numbers);
  const refuting = compared.filter(
    (c, k) => standing(numbers[k]!) === 'did not hold' && converged(c.fixed) && converged(c.learned),
  );
  const { verdict, words, why } = marginVerdict({
    refuting: refuting.map((c) => who(c.fixed)),
    holds: numbers.every((c) => standing(c) === 'held'),
    open: unsettled(compared),
    uncertain,
  });
  const intervals = compared.some((c) => c.fixed.bleu4Interval) ? ', with its 95% interval' : '';
  return {
    claim: `fixed target vectors lose at most ${PAPER_CLAIM.maxBleuLoss} BLEU-4 against learned ones`,
    verdict,
    sentence:
      `Fixed target vectors lose at most ${PAPER_CLAIM.maxBleuLoss} test BLEU-4 against learned ones: ${words} ` +
      `(BLEU-4 against learned${intervals}: ${comparedNumbers(numbers)})${why}.`,
  };
}

function paramsVerdict(compared: readonly Comparison[]): ClaimVerdict {
  return decreaseVerdict(
    compared.map((c) => ({
      who: who(c.fixed),
      decrease: (c.learned.learnable - c.fixed.learnable) / c.learned.learnable,
    })),
  );
}

export function captionClaimVerdicts(rows: readonly CaptionRow[]): ClaimVerdict[] {
  const compared = comparisons(rows);
  if (compared.length === 0) return [];
  return [
    bleuVerdict(compared),
    vocabularyVerdict(compared),
    rareWordVerdict(compared),
    paramsVerdict(compared),
  ].filter((v) => v !== null);
}

/** The verdict sentences, then where frost's setting differs from the paper's. */
export function captionVerdictSentences(
  rows: readonly CaptionRow[],
  setting: {
    data: string;
    testImages: number;
    preset: string;
    /** The runs read a frozen pretrained encoder's features (`--encoder`) rather than training a CNN. */
    pretrainedEncoder: boolean;
    budget: string;
    beam: number;
  },
): string[] {
  const verdicts = captionClaimVerdicts(rows);
  if (verdicts.length === 0) return [];
  const encoder = setting.pretrainedEncoder
    ? 'reading a frozen pretrained encoder'
    : 'with its CNN encoder trained from scratch with the captioner rather than pretrained (its weights count as ' +
      'learnable, so the output layer is a smaller share of them)';
  return [
    ...verdicts.map((v) => v.sentence),
    `Where frost's setting differs: ${setting.data} (${setting.testImages} test images) rather than ` +
      `${PAPER_RESULTS.table1.data}, the ${setting.preset} preset ${encoder}, ${setting.budget} per model, ${seedCount(rows)}, ` +
      `beam ${setting.beam}.`,
  ];
}
