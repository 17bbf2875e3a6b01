import { topKInto } from './top-k.ts';
import { SeededRandom } from '../random.ts';

/**
 * Picking the next token of a free-running generator (text completion): greedy, or sampling with a
 * temperature, top-k (Fan et al., 2018) and nucleus / top-p (Holtzman et al., 2020) filtering, in
 * the order transformers' generate applies them (temperature, then top-k, then top-p). Draws come
 * from frost's seeded generator (core/random.ts), so a seed reproduces a completion exactly on
 * every platform.
 *
 * Isomorphic: no Node APIs.
 */
export interface SamplingOptions {
  /** Greedy (argmax) when 0 or absent; otherwise the softmax temperature, at least {@link MIN_TEMPERATURE}. */
  temperature?: number;
  /** Keep only the k most probable tokens (0 or absent: all). */
  topK?: number;
  /** Keep the smallest set of most probable tokens whose probability reaches p, in (0, 1] (absent: 1). */
  topP?: number;
  /** Seed of the draws. @default 0 */
  seed?: number;
}

/**
 * The lowest sampling temperature: below it sampling is greedy in all but name (a log-probability gap of
 * 0.01 already weighs e^10 : 1), and far below it (1e-308) `logProb / t` overflows to -Infinity and the
 * draw returns the least probable token. Greedy decoding is asked for by leaving the temperature out (or 0).
 */
export const MIN_TEMPERATURE = 1e-3;

/** Checks options; the message names the field, for the HTTP layer's 400. */
export function checkSamplingOptions(opts: SamplingOptions): void {
  const { temperature, topK, topP, seed } = opts;
  if (temperature !== undefined && !(Number.isFinite(temperature) && temperature >= 0))
    throw new RangeError(`temperature must be a number >= 0 (0: greedy), got ${temperature}`);
  if (temperature !== undefined && temperature > 0 && temperature < MIN_TEMPERATURE)
    throw new RangeError(`temperature must be 0 (greedy) or at least ${MIN_TEMPERATURE}, got ${temperature}`);
  if (topK !== undefined && !(Number.isInteger(topK) && topK >= 0))
    throw new RangeError(`top_k must be an integer >= 0, got ${topK}`);
  if (topP !== undefined && !(topP > 0 && topP <= 1)) throw new RangeError(`top_p must be in (0, 1], got ${topP}`);
  if (seed !== undefined && !(Number.isInteger(seed) && seed >= 0 && seed <= 0xffffffff))
    throw new RangeError(`seed must be an integer in [0, 2^32), got ${seed}`);
}

/** A next-token picker over rows of log-probabilities. */
export class TokenSampler {
  private readonly rng: SeededRandom;

  constructor(private readonly opts: SamplingOptions = {}) {
    checkSamplingOptions(opts);
    this.rng = new SeededRandom(opts.seed ?? 0, 'sampling');
  }

  get greedy(): boolean {
    return !this.opts.temperature;
  }

  /**
   * The next token from log-probabilities `logProbs[start, start + vocab)`; tokens in `banned`
   * are never picked (e.g. `<pad>`, `<s>`, and `</s>` before a minimum length).
   */
  pick(logProbs: Float32Array, start: number, vocab: number, banned: ReadonlySet<number> = new Set()): number {
    if (this.greedy) {
      let best = -1;
      for (let v = 0; v < vocab; v++) {
        if (banned.has(v)) continue;
        if (best < 0 || logProbs[start + v] > logProbs[start + best]) best = v;
      }
      return best;
    }
    const t = this.opts.temperature!;
    const kept = this.candidates(logProbs, start, vocab, banned);
    const max = logProbs[start + kept[0]] / t;
    const weights = kept.map((v) => Math.exp(logProbs[start + v] / t - max));
    const total = weights.reduce((a, b) => a + b, 0);
    let n = kept.length;
    const p = this.opts.topP ?? 1;
    if (p < 1) {
      let acc = 0;
      for (let i = 0; i < kept.length; i++) {
        acc += weights[i] / total;
        if (acc >= p) {
          n = i + 1;
          break;
        }
      }
    }
    const mass = weights.slice(0, n).reduce((a, b) => a + b, 0);
    let u = this.rng.next() * mass;
    for (let i = 0; i < n; i++) {
      u -= weights[i];
      if (u < 0) return kept[i];
    }
    return kept[n - 1];
  }

  /**
   * The tokens sampling may pick, by descending log-probability (ties: lower id first): the top k
   * through top-k.ts's O(|V|) selection when `topK` is set (asking for k + |banned| and dropping
   * the banned, so no full sort runs per generated token), else every finite one.
   */
  private candidates(logProbs: Float32Array, start: number, vocab: number, banned: ReadonlySet<number>): number[] {
    const allowed = (v: number) => !banned.has(v) && logProbs[start + v] > -Infinity;
    const topK = this.opts.topK;
    if (topK) {
      const want = Math.min(vocab, topK + banned.size);
      const indices = new Int32Array(want);
      const m = topKInto(logProbs, want, indices, new Float64Array(want), start, start + vocab);
      return Array.from(indices.subarray(0, m)).filter(allowed).slice(0, topK);
    }
    const ids: number[] = [];
    for (let v = 0; v < vocab; v++) if (allowed(v)) ids.push(v);
    return ids.sort((a, b) => logProbs[start + b] - logProbs[start + a] || a - b);
  }
}
