import type { LogitsProcessor } from './logits-processors.ts';

/**
 * The contract between search and a model: search never sees tensors, only rows.
 * A "row" is one hypothesis being extended; beam search over B sentences with width K runs B*K rows.
 */
export interface StepModel<State> {
  readonly vocabSize: number;
  readonly bos: number;
  readonly eos: number;
  /**
   * Runs one decoder step for every row of `state`.
   * @param prev the previous token of each row (length = rows)
   * @returns log-probabilities, row-major [rows, vocabSize], and the state after the step
   */
  step(prev: Int32Array, state: State): Promise<{ logProbs: Float32Array; state: State }>;
  /**
   * Candidates per row that {@link stepTop} returns; set together with it.
   */
  readonly topK?: number;
  /**
   * Optional: the same step as {@link step}, returning only each row's `topK` most likely tokens.
   * Search uses it when every logits processor only masks known tokens, and it needs fewer
   * candidates per row than `topK` (plus the masked ones); otherwise, and when the candidates do not
   * decide a row (all masked, -Infinity or NaN), it runs {@link step} on the same state. Either way
   * the hypotheses are the same, so a model may leave this out.
   */
  stepTop?(prev: Int32Array, state: State): Promise<{ top: TopCandidates; state: State }>;
  /**
   * New row i is old row order[i]; used to expand a batch into beams, follow beams and drop finished rows.
   * May reuse `state`'s buffers (frost's runtime rewrites a step's output in place), so only the
   * returned state is used afterwards.
   */
  reorder(state: State, order: Int32Array): State;
}

/**
 * Each row's `k` largest log-probabilities of one step, row-major [rows, k]: descending, equal values
 * by lower token id (ONNX TopK's order, and core/decode/top-k's), with their token ids.
 */
export interface TopCandidates {
  readonly k: number;
  readonly logProbs: Float32Array;
  readonly tokens: Int32Array;
}

export interface SearchOptions {
  /** @default 1 (greedy) */
  beam?: number;
  /** Scores are divided by length^lengthPenalty when hypotheses are compared at the end. @default 1.0 */
  lengthPenalty?: number;
  /** Hypotheses per input. @default 1 */
  nBest?: number;
  /** Absolute cap on output tokens (without </s>). @default 200 */
  maxLen?: number;
  /**
   * Per-input cap: maxLenA * sourceLength + maxLenB (fairseq's --max-len-a/b); the smaller cap wins. @default a=2, b=10
   */
  maxLenA?: number;
  maxLenB?: number;
  /**
   * Output tokens (without </s>) required before </s> may be emitted; must be ≤ maxLen and overrides a smaller
   * per-input cap. @default 0
   */
  minLen?: number;
  /** Id of <pad>, which is never emitted (nor is <s>). Defaults to the model's `pad` field when it has one. */
  pad?: number;
  /** Id of <unk>. Defaults to the model's `unk` field when it has one. */
  unk?: number;
  /**
   * Let search emit <unk>. Off by default, so no output ever shows `<unk>` to a reader: a word-level model
   * names its second-best word instead (a subword model has no reason to emit it at all). Turn it on to
   * reproduce papers that scored outputs with <unk> in them.
   * @default false
   */
  allowUnk?: boolean;
  /** Extra processors, run after the built-in ones (suppress <pad>/<s>/<unk>, then minLen) on every step. */
  logitsProcessors?: readonly LogitsProcessor[];
}

export interface Hypothesis {
  /** Output token ids without <s> and </s>. */
  tokens: number[];
  /** Sum of token log-probabilities, </s> included. */
  logProb: number;
  /** logProb normalised by the length penalty: what n-best lists are ranked by. */
  score: number;
}
