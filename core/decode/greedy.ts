import { lengthNormalizedScore } from './length-penalty.ts';
import { runSearch, type Search } from './search.ts';
import {
  resolveSearchOptions,
  type DecodeModel,
  type GenerateOptions,
  type ResolvedSearchOptions,
} from './search-options.ts';
import { argmax, unmaskedCandidates } from './top-k.ts';
import type { Hypothesis, TopCandidates } from './types.ts';

/**
 * Greedy search: one row per input, the argmax token each step. No beam bookkeeping: rows only
 * move when an input finishes, and then the state is reordered once to drop it.
 */
export class GreedySearch implements Search {
  rows: number;
  readonly histories: number[][];
  private readonly opts: ResolvedSearchOptions;
  /** Input of each live row (rows stay in input order). */
  private readonly rowInput: Int32Array;
  private readonly prev: Int32Array;
  private readonly order: Int32Array;
  /** Per input: tokens so far (doubles as the row's history) and their summed log-probability. */
  private readonly tokens: number[][];
  private readonly logProb: Float64Array;
  private readonly finished: Hypothesis[];
  /** Per row, this step's token and its log-probability (scratch). */
  private readonly chosen: Int32Array;
  private readonly chosenLogProb: Float32Array;
  private t = 0;

  constructor(batchSize: number, opts: ResolvedSearchOptions) {
    this.opts = opts;
    this.rows = batchSize;
    this.rowInput = new Int32Array(batchSize);
    for (let b = 0; b < batchSize; b++) this.rowInput[b] = b;
    this.prev = new Int32Array(batchSize).fill(opts.bos);
    this.order = new Int32Array(batchSize);
    this.tokens = Array.from({ length: batchSize }, () => []);
    this.histories = this.tokens.slice();
    this.logProb = new Float64Array(batchSize);
    this.finished = new Array<Hypothesis>(batchSize);
    this.chosen = new Int32Array(batchSize);
    this.chosenLogProb = new Float32Array(batchSize);
  }

  prevTokens(): Int32Array {
    return this.prev.slice(0, this.rows);
  }

  step(logProbs: Float32Array): Int32Array | null {
    const { vocab, eos, maxLens } = this.opts;
    const { rowInput, chosen, chosenLogProb } = this;
    const t = this.t;
    for (let r = 0; r < this.rows; r++) {
      const base = r * vocab;
      let tok = eos;
      if (t < maxLens[rowInput[r]]) {
        tok = argmax(logProbs, base, base + vocab);
        // Nothing possible (all -Infinity/NaN): close the output rather than emit a masked token.
        if (!(logProbs[base + tok] > -Infinity)) tok = eos;
      }
      chosen[r] = tok;
      chosenLogProb[r] = logProbs[base + tok];
    }
    return this.advance();
  }

  candidatesNeeded(): number {
    // At its length cap a row takes </s> whatever its log-probability: that needs the whole row.
    for (let r = 0; r < this.rows; r++) if (this.t >= this.opts.maxLens[this.rowInput[r]]) return 0;
    return 1;
  }

  stepTop(top: TopCandidates, masked: readonly number[]): Int32Array | null | undefined {
    // The best unmasked candidate is the processed row's argmax.
    for (let r = 0; r < this.rows; r++) {
      if (!unmaskedCandidates(top, r, masked, 1, this.chosen, this.chosenLogProb, r)) return undefined;
    }
    return this.advance();
  }

  /** Appends each row's chosen token (`chosen`, `chosenLogProb`) and drops the rows that finished. */
  private advance(): Int32Array | null {
    const { eos, lengthPenalty } = this.opts;
    const { rowInput, prev, order, tokens, histories, chosen, chosenLogProb } = this;
    const rows = this.rows;
    let next = 0;
    for (let r = 0; r < rows; r++) {
      const b = rowInput[r];
      const tok = chosen[r];
      let lp = chosenLogProb[r];
      if (lp !== lp) lp = -Infinity;
      let total = (this.logProb[b] += lp);
      // Only a model emitting +Infinity can produce NaN here; rank it as impossible, not as unsortable.
      if (total !== total) total = this.logProb[b] = -Infinity;
      if (tok === eos) {
        this.finished[b] = {
          tokens: tokens[b],
          logProb: total,
          score: lengthNormalizedScore(total, tokens[b].length, lengthPenalty),
        };
        continue;
      }
      tokens[b].push(tok);
      // Compacting in place is safe: slot `next` <= r has already been read.
      rowInput[next] = b;
      histories[next] = tokens[b];
      prev[next] = tok;
      order[next] = r;
      next++;
    }
    this.t++;
    this.rows = next;
    histories.length = next;
    return next === 0 || next === rows ? null : order.slice(0, next);
  }

  results(): Hypothesis[][] {
    return Array.from(this.finished, (h) => [h]);
  }
}

/**
 * Greedy decoding of `batchSize` inputs (the `beam` option is ignored; `nBest` must be 1); see
 * `generate` for the other options.
 * @returns per input, a one-element list
 */
export async function greedySearch<State>(
  model: DecodeModel<State>,
  initialState: State,
  batchSize: number,
  opts: GenerateOptions = {},
): Promise<Hypothesis[][]> {
  const resolved = resolveSearchOptions(model, batchSize, opts);
  if (resolved.nBest !== 1) throw new RangeError(`nBest must be 1 for greedy search, got ${resolved.nBest}`);
  return runSearch(model, initialState, new GreedySearch(batchSize, resolved), resolved.processors);
}
