import type { StreamWindow } from '../../models/archs/lm-types.ts';

/**
 * A split as one continuous token stream (each line's tokens then `</s>`), laid out as B parallel
 * streams (Zaremba et al.'s batchify): stream b is the b-th contiguous 1/B of the tokens, so
 * window k of every stream continues window k − 1, and the trainer carries the LSTM state across
 * windows (truncated BPTT). The tail that does not fill B equal streams is dropped, as in PyTorch's
 * word_language_model; `tokens` counts what is scored.
 */
export class TokenStream {
  /** [B, L] row-major. */
  private readonly grid: Int32Array;
  readonly B: number;
  /** Tokens per stream. */
  readonly length: number;

  constructor(ids: Int32Array, B: number) {
    if (!(Number.isInteger(B) && B > 0)) throw new RangeError(`streams must be a positive integer, got ${B}`);
    const length = Math.floor(ids.length / B);
    if (length < 2) throw new RangeError(`${ids.length} tokens are too few for ${B} streams`);
    this.B = B;
    this.length = length;
    this.grid = ids.subarray(0, B * length);
  }

  /** Windows of at most `bptt` steps: each predicts positions 1…L−1 of its streams once. */
  windowCount(bptt: number): number {
    return Math.ceil((this.length - 1) / bptt);
  }

  /** Predicted tokens in all windows: B·(L − 1). */
  get tokens(): number {
    return this.B * (this.length - 1);
  }

  /** Window k: inputs at positions [k·bptt, k·bptt + T), targets one further; the last window may be shorter. */
  window(k: number, bptt: number): StreamWindow {
    const start = k * bptt;
    const T = Math.min(bptt, this.length - 1 - start);
    if (T <= 0) throw new RangeError(`window ${k} is past the end of the stream`);
    const { B } = this;
    const inputs = new Int32Array(B * T);
    const targets = new Int32Array(B * T);
    for (let b = 0; b < B; b++) {
      const row = b * this.length + start;
      inputs.set(this.grid.subarray(row, row + T), b * T);
      targets.set(this.grid.subarray(row + 1, row + 1 + T), b * T);
    }
    return { B, T, inputs, targets };
  }
}

/** Lines of token ids into one stream, each line followed by `eos`. */
export function streamIds(lines: readonly (readonly number[])[], eos: number): Int32Array {
  const total = lines.reduce((n, l) => n + l.length + 1, 0);
  const out = new Int32Array(total);
  let at = 0;
  for (const line of lines) {
    out.set(line, at);
    at += line.length;
    out[at++] = eos;
  }
  return out;
}
