/**
 * Every caption metric frost reports, from one call: BLEU-1..4, ROUGE-L and CIDEr-D as coco-caption
 * computes them, plus vocabulary usage (without `<unk>`).
 *
 * BLEU, ROUGE-L and CIDEr-D see hypotheses and references as coco-caption does: its PTBTokenizer step
 * (./ptb-tokenize.ts), the hypotheses as one document and the references as another, in image order.
 * Vocabulary usage counts words as the model's `caption` tokeniser splits them, so that they can be
 * looked up in the training counts.
 *
 * Isomorphic: no Node APIs.
 */
import { getTokenizer } from '../text/tokenize.ts';
import { SPECIALS } from '../vocab.ts';
import { cocoTokenizeCaptions } from './ptb-tokenize.ts';
import { ciderD } from './cider-d.ts';
import { cocoBleu, cocoBleuStats } from './coco-bleu.ts';
import { rougeL } from './rouge-l.ts';
import { type TrainCounts, type VocabUsage, vocabUsage } from './vocab-usage.ts';

/** Scores on coco-caption's scale (BLEU and ROUGE-L 0..1, CIDEr-D 0..10). */
export interface CaptionScores {
  bleu1: number;
  bleu2: number;
  bleu3: number;
  bleu4: number;
  rougeL: number;
  ciderD: number;
  vocab: VocabUsage;
  /** Number of images scored. */
  count: number;
}

/** The hypothesis without its `<unk>` tokens. */
function withoutUnk(text: string): string {
  return text
    .split(/\s+/)
    .filter((w) => w !== SPECIALS.unk.token)
    .join(' ');
}

/**
 * Scores `hyps[i]` against `refs[i]` (several references per image). BLEU, ROUGE-L and CIDEr-D see
 * `<unk>` as the hypothesis has it (a word that matches no reference); vocabulary usage and the
 * rare-word share leave it out, as the translation report does.
 * @param trainCounts training word counts, for the rare-word share
 */
export function evaluateCaptions(
  hyps: readonly string[],
  refs: readonly (readonly string[])[],
  trainCounts?: TrainCounts,
): CaptionScores {
  const { tokenize } = getTokenizer('caption');
  const h = cocoTokenizeCaptions(hyps);
  const r = regroup(cocoTokenizeCaptions(refs.flat()), refs);
  const { bleu } = cocoBleu(h, r);
  return {
    bleu1: bleu[0]!,
    bleu2: bleu[1]!,
    bleu3: bleu[2]!,
    bleu4: bleu[3]!,
    rougeL: rougeL(h, r).score,
    ciderD: ciderD(h, r).score,
    // <unk> is no word the model chose: the caption tokeniser would make it 'unk', a distinct and rare "word".
    vocab: vocabUsage(
      hyps.map((s) => tokenize(withoutUnk(s), 'en')),
      trainCounts ? { trainCounts } : {},
    ),
    count: hyps.length,
  };
}

/**
 * Each image's BLEU statistics as {@link evaluateCaptions} scores them (coco-caption's tokenisation, then
 * ./coco-bleu.ts's `cocoBleuStats`): what a paired bootstrap of BLEU-4 resamples (./paired-bootstrap.ts).
 */
export function captionBleuStats(
  hyps: readonly string[],
  refs: readonly (readonly string[])[],
): ReturnType<typeof cocoBleuStats> {
  return cocoBleuStats(cocoTokenizeCaptions(hyps), regroup(cocoTokenizeCaptions(refs.flat()), refs));
}

/** Splits a flat list back into the shape of `groups`. */
function regroup<T>(flat: readonly T[], groups: readonly (readonly unknown[])[]): T[][] {
  let at = 0;
  return groups.map((g) => flat.slice(at, (at += g.length)));
}
