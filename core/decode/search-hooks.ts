/**
 * The search driver (`runSearch`) with per-input reporting, for servers that decode many
 * requests in one batch: each input is reported the moment its search is over (so its request can
 * be answered while the rest of the batch keeps decoding), and optionally its best live prefix after
 * every step (streaming). The search classes are the same, so results are exactly those of
 * `generate` with the same options.
 */
import { createSearch } from './create-search.ts';
import { resolveSearchOptions, type GenerateOptions } from './search-options.ts';
import { runSearch } from './search.ts';
import type { Hypothesis, StepModel } from './types.ts';

/**
 * A decoder state that says which input each live row belongs to: row r reads the encoder row
 * `memoryRows[r]`, and the encoder has one row per input (core/runtime's `DecoderState`).
 */
export interface RowInputs {
  readonly memoryRows: Int32Array;
}

/** Callbacks of {@link searchWithHooks}. Inputs are numbered in batch order. */
export interface SearchHooks {
  /**
   * After every step, for each input still being searched, its best live prefix (token ids, no
   * <s>). The array is the search's own and is overwritten by later steps: read it right away.
   */
  onPrefix?(input: number, tokens: readonly number[]): void;
  /** Once per input, as soon as its search is over, with its hypotheses sorted best first. */
  onDone?(input: number, hypotheses: Hypothesis[]): void;
}

/**
 * Runs greedy (beam 1, nBest 1) or beam search exactly as core/decode's `generate` does, calling
 * `hooks` along the way. Rows are mapped to inputs through the state's `memoryRows` ({@link RowInputs}).
 * @returns per input, its hypotheses (as `generate`)
 */
export async function searchWithHooks<State extends RowInputs>(
  model: StepModel<State> & { readonly pad?: number },
  initialState: State,
  batchSize: number,
  opts: GenerateOptions,
  hooks: SearchHooks = {},
): Promise<Hypothesis[][]> {
  const resolved = resolveSearchOptions(model, batchSize, opts);
  const search = createSearch(batchSize, resolved);
  const live = new Uint8Array(batchSize).fill(1);
  const seen = new Uint8Array(batchSize);
  if (!hooks.onPrefix && !hooks.onDone) return runSearch(model, initialState, search, resolved.processors);
  return runSearch(model, initialState, search, resolved.processors, (state) => {
    // Which inputs still have rows: rows of an input are contiguous and the first is its best
    // (beam search keeps candidates in rank order), so the first row seen is the prefix to show.
    seen.fill(0);
    const liveRows = search.rows;
    for (let r = 0; r < liveRows; r++) {
      const b = state.memoryRows[r];
      if (seen[b]) continue;
      seen[b] = 1;
      hooks.onPrefix?.(b, search.histories[r]);
    }
    let finished: number[] | undefined;
    for (let b = 0; b < batchSize; b++) {
      if (live[b] && !seen[b]) {
        live[b] = 0;
        (finished ??= []).push(b);
      }
    }
    if (finished && hooks.onDone) {
      // results() only sorts the finished lists; cheap next to a decoder step.
      const results = search.results();
      for (const b of finished) hooks.onDone(b, results[b]);
    }
  });
}
