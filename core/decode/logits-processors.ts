/**
 * Logits processors edit a step's log-probabilities in place before search picks tokens, the way
 * transformers.js / HF `LogitsProcessor`s do. They compose by running in sequence, so constraints
 * (special-token suppression, minimum length, later n-gram blocking or forced prefixes) stay out
 * of the search loop. Masked entries become -Infinity; rows are not renormalised, as in fairseq.
 */

/**
 * Edits `logProbs` ([rows, vocab], row-major) in place.
 * `histories[r]` is row r's output so far (without <s>), for r < rows; every live row has the same
 * length at a given step. Processors must not keep or mutate `histories`: search reuses them.
 */
export type LogitsProcessor = ((logProbs: Float32Array, rows: number, vocab: number, histories: number[][]) => void) & {
  /**
   * Set by processors that only mask (set to -Infinity) tokens known from the output length alone,
   * the same for every row: the ids masked for rows of `length` output tokens. Search can then pick
   * tokens from a model's top-k candidates instead of whole rows (StepModel.stepTop).
   */
  readonly maskedIds?: (length: number) => readonly number[];
};

/** Masks the given token ids in every row (e.g. <pad> and <s>, which must never be emitted). */
export function suppressTokens(tokens: readonly number[]): LogitsProcessor {
  tokens.forEach((t, i) => {
    if (!Number.isInteger(t) || t < 0)
      throw new RangeError(`suppressTokens: tokens[${i}] must be a token id, got ${t}`);
  });
  const ids = Int32Array.from(new Set(tokens));
  const list = Array.from(ids);
  const processor = (logProbs: Float32Array, rows: number, vocab: number) => {
    for (let r = 0, base = 0; r < rows; r++, base += vocab) {
      for (let i = 0; i < ids.length; i++) logProbs[base + ids[i]] = -Infinity;
    }
  };
  return Object.assign(processor, { maskedIds: () => list });
}

/** Masks </s> in every row that has fewer than `minLen` output tokens, so outputs are at least that long. */
export function minLength(eos: number, minLen: number): LogitsProcessor {
  if (!Number.isInteger(eos) || eos < 0) throw new RangeError(`minLength: eos must be a token id, got ${eos}`);
  if (!Number.isInteger(minLen) || minLen < 0)
    throw new RangeError(`minLength: minLen must be a non-negative integer, got ${minLen}`);
  const processor = (logProbs: Float32Array, rows: number, vocab: number, histories: number[][]) => {
    for (let r = 0; r < rows; r++) {
      if (histories[r].length < minLen) logProbs[r * vocab + eos] = -Infinity;
    }
  };
  const masked = [eos];
  return Object.assign(processor, { maskedIds: (length: number) => (length < minLen ? masked : []) });
}

/**
 * The ids `processors` mask for rows of a given output length, when every one of them says
 * ({@link LogitsProcessor.maskedIds}); null when any may do something else.
 */
export function maskedIdsOf(processors: readonly LogitsProcessor[]): ((length: number) => readonly number[]) | null {
  if (!processors.every((p) => p.maskedIds !== undefined)) return null;
  if (processors.length === 1) return processors[0].maskedIds!;
  // Asked once per decoding step: one list per length, not a new one each time.
  const byLength = new Map<number, readonly number[]>();
  return (length) => {
    let ids = byLength.get(length);
    if (!ids) byLength.set(length, (ids = [...new Set(processors.flatMap((p) => p.maskedIds!(length)))]));
    return ids;
  };
}
