import { createSearch } from './create-search.ts';
import { runSearch } from './search.ts';
import { resolveSearchOptions, type DecodeModel, type GenerateOptions } from './search-options.ts';
import type { Hypothesis } from './types.ts';

export type { DecodeModel, GenerateOptions } from './search-options.ts';

/**
 * Decodes `batchSize` inputs at once with `model`, whose `initialState` holds one row per input
 * (in input order). Every time step makes one `model.step` call for all live rows.
 *
 * - `beam` 1 (default) runs greedy search; `beam` K > 1 runs batched beam search with K rows per
 *   input. An input stops once it has K finished hypotheses (fairseq's criterion: a heuristic,
 *   a longer hypothesis could in principle still have ranked higher), at its length cap, or when
 *   nothing can extend it; its rows are then dropped from the state via `model.reorder`.
 * - Ranking: `score = logProb / len^lengthPenalty`, where `len` counts the output tokens plus the
 *   closing </s> (whose log-probability is part of `logProb`). Beams are pruned by raw cumulative
 *   log-probability, as in fairseq; the penalty only orders finished hypotheses.
 * - Length: each input emits at most `min(maxLen, floor(maxLenA * sourceLengths[b] + maxLenB))`
 *   tokens (just `maxLen` without `sourceLengths`) and then a forced </s>; at least `minLen`.
 * - <pad> (from `opts.pad`, else `model.pad`) and <s> are never emitted. Log-probabilities of
 *   -Infinity or NaN mean "impossible"; an input that can emit nothing finite still gets one
 *   hypothesis closed with </s> (logProb -Infinity).
 * - Logits processors (built-ins, then `opts.logitsProcessors`) edit each step's `logProbs` in
 *   place, so the model should hand over a buffer it does not reuse.
 * - A model with `stepTop` (e.g. an exported rnn-attn) is asked for each row's top candidates
 *   instead, whenever every processor only masks known tokens (the built-ins); the hypotheses are
 *   the same as from whole rows.
 *
 * @returns per input, up to `nBest` distinct hypotheses sorted by score, best first
 * @throws RangeError / TypeError naming the argument when an option, `batchSize`,
 *   `sourceLengths` or the model's `vocabSize`/`bos`/`eos`/`pad` is invalid (e.g. `nBest > beam`)
 */
export async function generate<State>(
  model: DecodeModel<State>,
  initialState: State,
  batchSize: number,
  opts: GenerateOptions = {},
): Promise<Hypothesis[][]> {
  const resolved = resolveSearchOptions(model, batchSize, opts);
  return runSearch(model, initialState, createSearch(batchSize, resolved), resolved.processors);
}
