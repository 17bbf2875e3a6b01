import { lengthNormalizedScore } from './length-penalty.ts';
import { runSearch, type Search } from './search.ts';
import {
  resolveSearchOptions,
  type DecodeModel,
  type GenerateOptions,
  type ResolvedSearchOptions,
} from './search-options.ts';
import { topKInto, unmaskedCandidates } from './top-k.ts';
import type { Hypothesis, TopCandidates } from './types.ts';

/**
 * Beam search over a whole batch, fairseq `SequenceGenerator` semantics:
 *
 * - Every input starts as one row (no duplicate beams); after the first step it has up to K rows.
 *   The rows of an input are contiguous and inputs stay in order.
 * - Per input and step, candidates (row, token) are ranked by cumulative log-probability. A </s>
 *   candidate ranked within the top K is finished and stored; the K best non-</s> candidates
 *   become the next rows.
 * - An input is done once it has K finished hypotheses (fairseq's criterion), when it reaches its
 *   length cap (every live row is closed with a forced </s>), or when nothing finite can extend it.
 *   Its rows are then left out of the next reorder, so later steps run on fewer rows.
 *
 * Candidates with a -Infinity/NaN score are never kept or finished, except that an input with no
 * finished hypothesis and no finite continuation is closed with </s> so it still gets an answer
 * (with logProb -Infinity if the model allowed nothing).
 */
export class BeamSearch implements Search {
  rows: number;
  readonly histories: number[][] = [];
  private readonly opts: ResolvedSearchOptions;
  private readonly batchSize: number;
  /** Candidates kept per row: K non-</s> candidates are always among a row's top K+1. */
  private readonly perRow: number;
  /** Merged candidates ranked per input: the top K non-</s> are within the top K + (≤ K </s>). */
  private readonly select: number;
  /** Per input: first live row and live-row count (0 once done). */
  private readonly inputStart: Int32Array;
  private readonly inputCount: Int32Array;
  /** Per row, double-buffered: cumulative log-prob and token history (arrays reused across steps). */
  private cum: Float64Array;
  private nextCum: Float64Array;
  private pool: number[][];
  private nextPool: number[][];
  private readonly prev: Int32Array;
  private readonly parent: Int32Array;
  /** Scratch reused every step: one row's top tokens, one input's candidates, the selection. */
  private readonly rowTok: Int32Array;
  private readonly rowVal: Float64Array;
  private readonly candTok: Int32Array;
  private readonly candRow: Int32Array;
  private readonly candScore: Float64Array;
  private readonly selIdx: Int32Array;
  private readonly selVal: Float64Array;
  private readonly finished: Hypothesis[][];
  /** stepTop's candidates, perRow per row. */
  private readonly topTok: Int32Array;
  private readonly topVal: Float64Array;
  private t = 0;

  constructor(batchSize: number, opts: ResolvedSearchOptions) {
    const k = opts.beam;
    const maxRows = batchSize * k;
    this.opts = opts;
    this.batchSize = batchSize;
    this.perRow = Math.min(k + 1, opts.vocab);
    this.select = 2 * k;
    this.rows = batchSize;
    this.inputStart = new Int32Array(batchSize);
    this.inputCount = new Int32Array(batchSize);
    for (let b = 0; b < batchSize; b++) {
      this.inputStart[b] = b;
      this.inputCount[b] = 1;
    }
    this.cum = new Float64Array(maxRows);
    this.nextCum = new Float64Array(maxRows);
    this.pool = Array.from({ length: maxRows }, () => []);
    this.nextPool = Array.from({ length: maxRows }, () => []);
    this.prev = new Int32Array(maxRows).fill(opts.bos);
    this.parent = new Int32Array(maxRows);
    this.rowTok = new Int32Array(this.perRow);
    this.rowVal = new Float64Array(this.perRow);
    this.candTok = new Int32Array(k * this.perRow);
    this.candRow = new Int32Array(k * this.perRow);
    this.candScore = new Float64Array(k * this.perRow);
    this.selIdx = new Int32Array(this.select);
    this.selVal = new Float64Array(this.select);
    this.finished = Array.from({ length: batchSize }, () => []);
    this.topTok = new Int32Array(maxRows * this.perRow);
    this.topVal = new Float64Array(maxRows * this.perRow);
    this.syncHistories();
  }

  prevTokens(): Int32Array {
    return this.prev.slice(0, this.rows);
  }

  step(logProbs: Float32Array): Int32Array | null {
    return this.advance(logProbs);
  }

  candidatesNeeded(): number {
    // An input at its length cap closes its rows with </s>'s log-probability: that needs whole rows.
    for (let b = 0; b < this.batchSize; b++) if (this.inputCount[b] > 0 && this.t >= this.opts.maxLens[b]) return 0;
    return this.perRow;
  }

  stepTop(top: TopCandidates, masked: readonly number[]): Int32Array | null | undefined {
    const { perRow, topTok, topVal } = this;
    // Every row's perRow best unmasked candidates, before anything changes: any row they cannot
    // decide sends the whole step to step().
    for (let row = 0; row < this.rows; row++) {
      if (!unmaskedCandidates(top, row, masked, perRow, topTok, topVal, row * perRow)) return undefined;
    }
    return this.advance(null);
  }

  /** One step from whole rows (`logProbs`) or, when null, from the candidates stepTop gathered. */
  private advance(logProbs: Float32Array | null): Int32Array | null {
    const { vocab, eos, beam: k, maxLens } = this.opts;
    const { inputStart, inputCount, cum, pool, perRow, rowTok, rowVal, candTok, candRow, candScore, selIdx, selVal } =
      this;
    const t = this.t;
    const rows = this.rows;
    let next = 0;

    for (let b = 0; b < this.batchSize; b++) {
      const count = inputCount[b];
      if (count === 0) continue;
      const start = inputStart[b];
      inputStart[b] = next;
      inputCount[b] = 0;
      const fin = this.finished[b];

      if (t >= maxLens[b]) {
        this.closeRows(b, start, count, logProbs);
        continue;
      }

      // Gather each row's top candidates; a row's cumulative score is a constant shift, so the
      // row-local ranking is the global one within that row.
      let n = 0;
      for (let row = start; row < start + count; row++) {
        const base = row * vocab;
        let m = perRow;
        if (logProbs) m = topKInto(logProbs, perRow, rowTok, rowVal, base, base + vocab);
        else {
          for (let i = 0; i < perRow; i++) {
            rowTok[i] = this.topTok[row * perRow + i];
            rowVal[i] = this.topVal[row * perRow + i];
          }
        }
        const c = cum[row];
        for (let i = 0; i < m; i++, n++) {
          candTok[n] = rowTok[i];
          candRow[n] = row;
          candScore[n] = c + rowVal[i];
        }
      }
      const m = topKInto(candScore, this.select, selIdx, selVal, 0, n);

      // Finish </s> candidates ranked within the top K (fairseq: eos_mask[:, :beam_size]).
      const topRanks = m < k ? m : k;
      for (let i = 0; i < topRanks; i++) {
        const s = selVal[i];
        if (!(s > -Infinity)) break;
        const c = selIdx[i];
        if (candTok[c] === eos) this.finish(fin, pool[candRow[c]], t, s);
      }
      if (fin.length >= k) continue;

      // The K best non-</s> candidates continue.
      let kept = 0;
      for (let i = 0; i < m && kept < k; i++) {
        const s = selVal[i];
        if (!(s > -Infinity)) break;
        const c = selIdx[i];
        const tok = candTok[c];
        if (tok === eos) continue;
        const row = candRow[c];
        const src = pool[row];
        const dst = this.nextPool[next];
        // Histories are reused arrays that only ever grow by one per step, so this never allocates
        // after warm-up: dst has length <= t and ends up with exactly t + 1 entries.
        for (let j = 0; j < t; j++) dst[j] = src[j];
        dst[t] = tok;
        this.parent[next] = row;
        this.nextCum[next] = s;
        this.prev[next] = tok;
        next++;
        kept++;
      }
      if (kept === 0 && fin.length === 0) {
        this.closeRows(b, start, count, logProbs);
        continue;
      }
      inputCount[b] = kept;
    }

    const swapCum = this.cum;
    this.cum = this.nextCum;
    this.nextCum = swapCum;
    const swapPool = this.pool;
    this.pool = this.nextPool;
    this.nextPool = swapPool;
    this.rows = next;
    this.t = t + 1;
    this.syncHistories();

    if (next === 0) return null;
    if (next === rows) {
      let identity = true;
      for (let i = 0; i < next && identity; i++) identity = this.parent[i] === i;
      if (identity) return null;
    }
    return this.parent.slice(0, next);
  }

  results(): Hypothesis[][] {
    const nBest = this.opts.nBest;
    // Array#sort is stable, so equal scores keep the order in which they finished.
    return this.finished.map((fin) =>
      fin
        .slice()
        .sort((x, y) => y.score - x.score)
        .slice(0, nBest),
    );
  }

  /** Closes every live row of input `b` with </s> (at its length cap, or when nothing else is possible). */
  private closeRows(b: number, start: number, count: number, logProbs: Float32Array | null): void {
    const { vocab, eos } = this.opts;
    // candidatesNeeded() asks for whole rows at a length cap, and stepTop() only proceeds with perRow
    // finite candidates per row, which always leave a row to continue.
    if (!logProbs) throw new Error('BeamSearch: closing rows needs whole rows of log-probabilities');
    for (let row = start; row < start + count; row++) {
      let lp = logProbs[row * vocab + eos];
      if (lp !== lp) lp = -Infinity;
      this.finish(this.finished[b], this.pool[row], this.t, this.cum[row] + lp);
    }
  }

  private finish(fin: Hypothesis[], history: number[], t: number, logProb: number): void {
    // Only a model emitting +Infinity can produce NaN here; rank it as impossible, not as unsortable.
    if (logProb !== logProb) logProb = -Infinity;
    fin.push({
      tokens: history.slice(0, t),
      logProb,
      score: lengthNormalizedScore(logProb, t, this.opts.lengthPenalty),
    });
  }

  private syncHistories(): void {
    const h = this.histories;
    h.length = this.rows;
    for (let i = 0; i < this.rows; i++) h[i] = this.pool[i];
  }
}

/** Beam search of `batchSize` inputs with `opts.beam` rows each; see `generate` for the options. */
export async function beamSearch<State>(
  model: DecodeModel<State>,
  initialState: State,
  batchSize: number,
  opts: GenerateOptions = {},
): Promise<Hypothesis[][]> {
  const resolved = resolveSearchOptions(model, batchSize, opts);
  return runSearch(model, initialState, new BeamSearch(batchSize, resolved), resolved.processors);
}
