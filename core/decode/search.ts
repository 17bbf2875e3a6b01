import { maskedIdsOf, type LogitsProcessor } from './logits-processors.ts';
import type { Hypothesis, StepModel, TopCandidates } from './types.ts';

/**
 * A search strategy (greedy, beam) as a synchronous state machine over rows, fairseq `search.py`
 * style: it never touches the model, so the async driver below is shared and the selection logic
 * is testable on its own. Each call to {@link Search.step} consumes one step's log-probabilities
 * for the current rows and decides which rows continue.
 */
export interface Search {
  /** Live rows; the driver stops at 0. */
  readonly rows: number;
  /** Each live row's output so far, for logits processors (entries r < rows). */
  readonly histories: number[][];
  /** The token each live row feeds to the next decoder step: a fresh array the model may keep. */
  prevTokens(): Int32Array;
  /**
   * Consumes `logProbs` ([rows, vocab], already processed) and advances every live row.
   * @returns the reorder for the model state (new row i = old row order[i]), or null when the
   *   rows carry over unchanged or none are left
   */
  step(logProbs: Float32Array): Int32Array | null;
  /**
   * Candidates per live row that {@link stepTop} would need this step, or 0 when this step needs whole
   * rows (e.g. an input at its length cap, which reads </s>'s log-probability).
   */
  candidatesNeeded?(): number;
  /**
   * {@link step} from each row's top candidates, with `masked` the ids the processors would have
   * masked: the same choice as `step` on the processed rows. Returns undefined, having changed
   * nothing, when the candidates cannot decide a row (too few unmasked finite ones, or NaN); the
   * driver then runs the dense step.
   */
  stepTop?(top: TopCandidates, masked: readonly number[]): Int32Array | null | undefined;
  /** Per input, its best hypotheses sorted by score (descending). */
  results(): Hypothesis[][];
}

/**
 * Drives `search` to completion: one batched `model.step` per time step for all live rows, then
 * the processors, then selection, then at most one `model.reorder` (which both follows beam
 * back-pointers and drops rows of finished inputs). `afterStep`, when given, sees the state of the
 * rows still alive after each step (servers use it to answer inputs as soon as they finish).
 */
export async function runSearch<State>(
  model: StepModel<State>,
  initialState: State,
  search: Search,
  processors: readonly LogitsProcessor[],
  afterStep?: (state: State) => void,
): Promise<Hypothesis[][]> {
  const vocab = model.vocabSize;
  let state = initialState;
  // Candidates instead of whole rows when the model offers them and the processors only mask.
  const maskedAt = model.stepTop && model.topK && search.stepTop ? maskedIdsOf(processors) : null;
  for (let t = 0; search.rows > 0; t++) {
    const rows = search.rows;
    if (maskedAt) {
      const masked = maskedAt(t);
      const need = search.candidatesNeeded!();
      if (need > 0 && need + masked.length <= model.topK!) {
        const out = await model.stepTop!(search.prevTokens(), state);
        const { top } = out;
        if (top.k !== model.topK || top.logProbs.length !== rows * top.k || top.tokens.length !== rows * top.k) {
          throw new RangeError(
            `model.stepTop returned ${top.logProbs.length} log-probs and ${top.tokens.length} tokens with k = ${top.k}, expected rows*topK = ${rows}*${model.topK}`,
          );
        }
        const order = search.stepTop!(top, masked);
        if (order !== undefined) {
          state = order === null ? out.state : model.reorder(out.state, order);
          afterStep?.(state);
          continue;
        }
        // Undecided from candidates: the dense step below runs on the same (unchanged) state.
      }
    }
    const out = await model.step(search.prevTokens(), state);
    const logProbs = out.logProbs;
    // The model is a boundary too: a wrong shape would otherwise silently mix rows.
    if (!(logProbs instanceof Float32Array) || logProbs.length !== rows * vocab) {
      throw new RangeError(
        `model.step returned logProbs of length ${(logProbs as { length?: number } | undefined)?.length}, expected Float32Array of rows*vocabSize = ${rows}*${vocab}`,
      );
    }
    for (let i = 0; i < processors.length; i++) processors[i](logProbs, rows, vocab, search.histories);
    const order = search.step(logProbs);
    state = order === null ? out.state : model.reorder(out.state, order);
    afterStep?.(state);
  }
  return search.results();
}
