/**
 * The length-normalised score that n-best lists are ranked by (fairseq's `normalize_scores`):
 * `logProb / len^lengthPenalty`, where `len = tokenCount + 1` counts the closing </s>, because the
 * </s> log-probability is part of `logProb`. With penalty 0 this is the raw log-probability; larger
 * penalties favour longer outputs (log-probabilities are ≤ 0, so dividing shrinks their magnitude).
 */
export function lengthNormalizedScore(logProb: number, tokenCount: number, lengthPenalty: number): number {
  return lengthPenalty === 0 ? logProb : logProb / Math.pow(tokenCount + 1, lengthPenalty);
}
