import { SeededRandom } from '../../core/random.ts';

/**
 * A synthetic corpus whose entropy is known exactly: a seeded first-order Markov chain over `words`
 * words and an end-of-line symbol. Each symbol has `successors` possible next symbols with seeded
 * probabilities; end-of-line is one successor of some words, and a line starts from end-of-line's
 * row. So the token stream a language model reads (each line's words then `</s>`) is exactly this
 * chain, and its entropy rate H = Σ_i π_i H(P_i·) (π stationary) is the best cross-entropy per
 * token any model can reach: a model's perplexity on a long sample tends to no less than exp(H).
 */
export interface MarkovCorpusOptions {
  seed: number;
  /** Word types (w0 … w{n−1}). */
  words: number;
  /** Next symbols per symbol. */
  successors: number;
  /** Tokens (words and end-of-line) per split. */
  tokens: { train: number; valid: number; test: number };
}

export interface MarkovCorpus {
  lines: { train: string[]; valid: string[]; test: string[] };
  /** Entropy rate in nats per token (end-of-line included). */
  entropyRate: number;
  /** Σ log P(token | previous) under the true chain over a split's stream (its first token given end-of-line). */
  logProb(lines: readonly string[]): number;
}

/** Symbol n (= `words`) is end-of-line. */
export function markovCorpus(opts: MarkovCorpusOptions): MarkovCorpus {
  const { words: n, successors: k } = opts;
  if (k < 1 || k > n + 1) throw new RangeError(`successors must be in [1, ${n + 1}], got ${k}`);
  const rng = new SeededRandom(opts.seed, 'markov-corpus');
  const S = n + 1;
  const eol = n;
  // P[i] as a dense row; every word reaches end-of-line with some chance through `eol` in a row or a path.
  const P: Float64Array[] = [];
  for (let i = 0; i < S; i++) {
    const row = new Float64Array(S);
    const next = rng.shuffle(Array.from({ length: S }, (_, j) => j).filter((j) => !(i === eol && j === eol)));
    const chosen = next.slice(0, k);
    // Lines must end: word i's successors include end-of-line when i is a multiple of 3.
    if (i !== eol && i % 3 === 0 && !chosen.includes(eol)) chosen[0] = eol;
    const weights = chosen.map(() => 0.2 + rng.next());
    const sum = weights.reduce((a, b) => a + b, 0);
    chosen.forEach((j, c) => (row[j] = weights[c] / sum));
    P.push(row);
  }
  // Stationary distribution by power iteration (the chain is irreducible and aperiodic for these sizes).
  let pi = new Float64Array(S).fill(1 / S);
  for (let it = 0; it < 5000; it++) {
    const nextPi = new Float64Array(S);
    for (let i = 0; i < S; i++) for (let j = 0; j < S; j++) nextPi[j] += pi[i] * P[i][j];
    pi = nextPi;
  }
  let entropyRate = 0;
  for (let i = 0; i < S; i++)
    for (let j = 0; j < S; j++) if (P[i][j] > 0) entropyRate -= pi[i] * P[i][j] * Math.log(P[i][j]);

  const word = (j: number) => `w${j}`;
  const sample = (from: number): number => {
    const u = rng.next();
    let acc = 0;
    for (let j = 0; j < S; j++) {
      acc += P[from][j];
      if (u < acc) return j;
    }
    // Rounding left u above the row's sum: the last symbol with any probability.
    let last = S - 1;
    while (P[from][last] === 0) last--;
    return last;
  };
  const split = (tokens: number): string[] => {
    const lines: string[] = [];
    let line: string[] = [];
    let prev = eol;
    for (let t = 0; t < tokens || line.length > 0; t++) {
      const next = sample(prev);
      if (next === eol) {
        // An empty line would vanish in the reader (blank lines are skipped); the chain never emits one
        // when end-of-line cannot follow itself.
        lines.push(line.join(' '));
        line = [];
      } else line.push(word(next));
      prev = next;
    }
    return lines;
  };
  const ids = new Map(Array.from({ length: n }, (_, j) => [word(j), j] as const));
  return {
    lines: { train: split(opts.tokens.train), valid: split(opts.tokens.valid), test: split(opts.tokens.test) },
    entropyRate,
    logProb(lines) {
      let sum = 0;
      let prev = eol;
      for (const line of lines) {
        for (const w of [...line.split(' ').map((x) => ids.get(x)!), eol]) {
          sum += Math.log(P[prev][w]);
          prev = w;
        }
      }
      return sum;
    },
  };
}
