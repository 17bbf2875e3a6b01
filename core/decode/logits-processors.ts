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
export type LogitsProcessor = (logProbs: Float32Array, rows: number, vocab: number, histories: number[][]) => void;

/** Masks the given token ids in every row (e.g. <pad> and <s>, which must never be emitted). */
export function suppressTokens(tokens: readonly number[]): LogitsProcessor {
  tokens.forEach((t, i) => {
    if (!Number.isInteger(t) || t < 0)
      throw new RangeError(`suppressTokens: tokens[${i}] must be a token id, got ${t}`);
  });
  const ids = Int32Array.from(new Set(tokens));
  return (logProbs, rows, vocab) => {
    for (let r = 0, base = 0; r < rows; r++, base += vocab) {
      for (let i = 0; i < ids.length; i++) logProbs[base + ids[i]] = -Infinity;
    }
  };
}

/** Masks </s> in every row that has fewer than `minLen` output tokens, so outputs are at least that long. */
export function minLength(eos: number, minLen: number): LogitsProcessor {
  if (!Number.isInteger(eos) || eos < 0) throw new RangeError(`minLength: eos must be a token id, got ${eos}`);
  if (!Number.isInteger(minLen) || minLen < 0)
    throw new RangeError(`minLength: minLen must be a non-negative integer, got ${minLen}`);
  return (logProbs, rows, vocab, histories) => {
    for (let r = 0; r < rows; r++) {
      if (histories[r].length < minLen) logProbs[r * vocab + eos] = -Infinity;
    }
  };
}
