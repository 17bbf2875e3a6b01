import * as tf from '@tensorflow/tfjs-core';
import type { LanguageModel } from '../../models/archs/lm-types.ts';
import { TokenStream } from '../data/lm-stream.ts';

/** Every predicted token of a split and the model's log-probability of it (natural log). */
export interface ScoredStream {
  targets: Int32Array;
  logProbs: Float32Array;
  /**
   * How many streams the split was read as; each holds `logProbs.length / streams` tokens, one
   * after another. 1 for {@link scoreLines} (one stream of lines, each from a fresh state).
   */
  streams: number;
}

/**
 * How evaluation carries the recurrent state: `stream` through each of the run's `evalStreams`
 * streams (as training reads the corpus, and as PTB/WikiText results are reported); `line` from a
 * fresh state at every line, each read as `/v1/score` reads a text (`</s>` first), so no line's
 * score depends on the lines before it.
 */
export const LM_EVAL_CONTEXTS = ['stream', 'line'] as const;
export type LmEvalContext = (typeof LM_EVAL_CONTEXTS)[number];

/**
 * Scores a split as `streams` parallel streams, state carried across windows of `bptt` steps, as
 * training reads it (the first token of each stream has no context and is not scored).
 */
export function scoreStream(model: LanguageModel, ids: Int32Array, streams: number, bptt: number): ScoredStream {
  const stream = new TokenStream(ids, Math.max(1, Math.min(streams, Math.floor(ids.length / 2))));
  const targets = new Int32Array(stream.tokens);
  const logProbs = new Float32Array(stream.tokens);
  let state = model.initialState(stream.B);
  const perStream = stream.length - 1;
  for (let k = 0; k < stream.windowCount(bptt); k++) {
    const w = stream.window(k, bptt);
    const out = model.targetLogProbs(w, state);
    tf.dispose(Object.values(state));
    state = out.state;
    for (let b = 0; b < w.B; b++) {
      const at = b * perStream + k * bptt;
      targets.set(w.targets.subarray(b * w.T, (b + 1) * w.T), at);
      logProbs.set(out.logProbs.subarray(b * w.T, (b + 1) * w.T), at);
    }
  }
  tf.dispose(Object.values(state));
  return { targets, logProbs, streams: stream.B };
}

/**
 * Scores a split line by line: every line (its tokens then `</s>`, as streamIds lays them out) from
 * a zero state fed `</s>`, as LmRuntime.score reads a text. Every token of the split is predicted
 * once, the first included. Lines go in batches of `rows` of similar lengths, padded at the end;
 * a recurrent model never reads its padding before the positions that count.
 */
export function scoreLines(model: LanguageModel, ids: Int32Array, eos: number, rows = 64): ScoredStream {
  const lines: Array<{ start: number; length: number }> = [];
  for (let i = 0, start = 0; i < ids.length; i++) {
    if (ids[i] === eos || i === ids.length - 1) {
      lines.push({ start, length: i - start + 1 });
      start = i + 1;
    }
  }
  const logProbs = new Float32Array(ids.length);
  const order = lines.map((_, i) => i).sort((a, b) => lines[a].length - lines[b].length || a - b);
  for (let k = 0; k < order.length; k += rows) {
    const group = order.slice(k, k + rows).map((i) => lines[i]);
    const B = group.length;
    const T = Math.max(...group.map((l) => l.length));
    const inputs = new Int32Array(B * T).fill(eos);
    const targets = new Int32Array(B * T).fill(eos);
    group.forEach(({ start, length }, b) => {
      inputs.set(ids.subarray(start, start + length - 1), b * T + 1);
      targets.set(ids.subarray(start, start + length), b * T);
    });
    const state = model.initialState(B);
    const out = model.targetLogProbs({ B, T, inputs, targets }, state);
    tf.dispose([...Object.values(state), ...Object.values(out.state)]);
    group.forEach(({ start, length }, b) => logProbs.set(out.logProbs.subarray(b * T, b * T + length), start));
  }
  return { targets: ids.slice(), logProbs, streams: 1 };
}

/** Mean NLL (nats) and perplexity over some tokens. */
export interface Perplexity {
  tokens: number;
  /** Mean negative log-likelihood per token, in nats. */
  nll: number;
  perplexity: number;
}

/** One word-frequency bin: the words whose training counts put them there, and the perplexity on them. */
export interface FrequencyBin extends Perplexity {
  /** 1 = the most frequent words. */
  bin: number;
  /** Word types in the bin. */
  types: number;
  /** Training counts of its rarest and most frequent word. */
  minCount: number;
  maxCount: number;
}

export interface PerplexityReport extends Perplexity {
  bins: FrequencyBin[];
}

function perplexityOf(nllSum: number, tokens: number): Perplexity {
  const nll = tokens > 0 ? nllSum / tokens : NaN;
  return { tokens, nll, perplexity: Math.exp(nll) };
}

/** Training count of every id, from the training stream. */
export function tokenCounts(ids: Int32Array, vocabSize: number): Float64Array {
  const counts = new Float64Array(vocabSize);
  for (const id of ids) counts[id] += 1;
  return counts;
}

/**
 * Bins of equal training-token mass: ids ranked by training count (ties by id), bin 1 takes the most
 * frequent words up to 1/n of the training tokens, and so on; bin n holds the rarest words, those
 * never seen in training included. Equal mass, not equal type counts, so every bin has enough test
 * tokens to measure (the rare bins hold most of the types).
 * @returns bin index (0-based) by id
 */
export function frequencyBins(counts: Float64Array, n: number): Int32Array {
  const order = Array.from(counts.keys()).sort((a, b) => counts[b] - counts[a] || a - b);
  const total = counts.reduce((s, c) => s + c, 0);
  const binOf = new Int32Array(counts.length);
  let seen = 0;
  for (const id of order) {
    binOf[id] = Math.min(n - 1, Math.floor((seen / Math.max(total, 1)) * n));
    seen += counts[id];
  }
  return binOf;
}

/** Perplexity overall and by `bins` frequency bins of the training counts. */
export function perplexityReport(scored: ScoredStream, counts: Float64Array, bins = 5): PerplexityReport {
  const binOf = frequencyBins(counts, bins);
  const nllSums = new Float64Array(bins);
  const tokens = new Float64Array(bins);
  let nllSum = 0;
  for (let i = 0; i < scored.targets.length; i++) {
    const b = binOf[scored.targets[i]];
    nllSums[b] -= scored.logProbs[i];
    tokens[b] += 1;
    nllSum -= scored.logProbs[i];
  }
  const out: FrequencyBin[] = [];
  for (let b = 0; b < bins; b++) {
    let types = 0;
    let minCount = Infinity;
    let maxCount = 0;
    counts.forEach((c, id) => {
      if (binOf[id] !== b) return;
      types++;
      minCount = Math.min(minCount, c);
      maxCount = Math.max(maxCount, c);
    });
    out.push({ bin: b + 1, types, minCount: types ? minCount : 0, maxCount, ...perplexityOf(nllSums[b], tokens[b]) });
  }
  return { ...perplexityOf(nllSum, scored.targets.length), bins: out };
}
