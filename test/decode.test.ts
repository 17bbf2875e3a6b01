import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BeamSearch, beamSearch } from '../core/decode/beam-search.ts';
import { generate } from '../core/decode/generate.ts';
import { greedySearch } from '../core/decode/greedy.ts';
import { lengthNormalizedScore } from '../core/decode/length-penalty.ts';
import { minLength, suppressTokens, type LogitsProcessor } from '../core/decode/logits-processors.ts';
import { resolveSearchOptions } from '../core/decode/search-options.ts';
import { argmax, topK, topKInto } from '../core/decode/top-k.ts';
import type { Hypothesis, StepModel } from '../core/decode/types.ts';

// Specials shared by every test vocabulary; regular tokens start at 3.
const PAD = 0;
const BOS = 1;
const EOS = 2;

/** One row of the model's state: which input it decodes and how many tokens it has consumed. */
interface Row {
  input: number;
  pos: number;
}

/** log-probabilities of the next token given (input, position, previous token). */
type Table = (input: number, pos: number, prev: number) => Float32Array;

/**
 * A deterministic Markov "decoder": plain JS, state is one object per row. It checks the contract
 * on every call (prev and state agree on the row count, reorder indices are in range) and records
 * what search asked of it.
 */
class TableModel implements StepModel<Row[]> {
  readonly bos = BOS;
  readonly eos = EOS;
  readonly pad = PAD;
  readonly stepRows: number[] = [];
  readonly reorderRows: number[] = [];

  constructor(
    readonly vocabSize: number,
    private readonly table: Table,
  ) {}

  async step(prev: Int32Array, state: Row[]): Promise<{ logProbs: Float32Array; state: Row[] }> {
    assert.equal(prev.length, state.length, 'prev and state disagree on the row count');
    this.stepRows.push(state.length);
    const V = this.vocabSize;
    const logProbs = new Float32Array(state.length * V);
    state.forEach((row, r) => logProbs.set(this.table(row.input, row.pos, prev[r]), r * V));
    return { logProbs, state: state.map((row) => ({ input: row.input, pos: row.pos + 1 })) };
  }

  reorder(state: Row[], order: Int32Array): Row[] {
    this.reorderRows.push(order.length);
    return Array.from(order, (i) => {
      assert.ok(i >= 0 && i < state.length, `reorder index ${i} out of range for ${state.length} rows`);
      return state[i];
    });
  }
}

/** Initial state for inputs `inputs` (one row each). */
const rowsFor = (inputs: number[]): Row[] => inputs.map((input) => ({ input, pos: 0 }));

/** A small hash-seeded PRNG, so a table entry depends only on its key, not on call order. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function logSoftmax(logits: number[]): Float32Array {
  const max = Math.max(...logits);
  const lse = max + Math.log(logits.reduce((s, x) => s + Math.exp(x - max), 0));
  return Float32Array.from(logits, (x) => x - lse);
}

/** A random position-dependent Markov table, memoised. */
function randomTable(V: number, seed: number, temperature = 2): Table {
  const memo = new Map<string, Float32Array>();
  return (input, pos, prev) => {
    const key = `${input},${pos},${prev}`;
    let row = memo.get(key);
    if (!row) {
      const r = rng(seed * 1_000_003 + input * 10_007 + pos * 101 + prev);
      row = logSoftmax(Array.from({ length: V }, () => (r() - 0.5) * 2 * temperature));
      memo.set(key, row);
    }
    return row;
  };
}

/** A position-independent table from probabilities given per previous token; the rest share what is left. */
function markov(V: number, spec: Record<number, Record<number, number>>): Table {
  const rows = new Map<number, Float32Array>();
  for (let prev = 0; prev < V; prev++) {
    const given = spec[prev] ?? {};
    const p = new Array<number>(V).fill(NaN);
    let mass = 0;
    for (const [tok, q] of Object.entries(given)) {
      p[Number(tok)] = q;
      mass += q;
    }
    const free = p.filter((x) => Number.isNaN(x)).length;
    const rest = free > 0 ? Math.max(1 - mass, 1e-6) / free : 0;
    rows.set(
      prev,
      Float32Array.from(p, (x) => Math.log(Number.isNaN(x) ? rest : x)),
    );
  }
  return (_input, _pos, prev) => rows.get(prev)!;
}

/** Greedy by hand: argmax chaining over the table with <pad>/<s> excluded. */
function greedyByHand(table: Table, V: number, input: number, maxLen: number): Hypothesis {
  const tokens: number[] = [];
  let logProb = 0;
  let prev = BOS;
  for (let pos = 0; ; pos++) {
    const row = table(input, pos, prev);
    let tok = EOS;
    if (pos < maxLen) {
      let best = -Infinity;
      for (let v = 0; v < V; v++) {
        if (v !== PAD && v !== BOS && row[v] > best) {
          best = row[v];
          tok = v;
        }
      }
    }
    logProb += row[tok];
    if (tok === EOS) return { tokens, logProb, score: logProb / (tokens.length + 1) };
    tokens.push(tok);
    prev = tok;
  }
}

/** Every output of regular tokens up to maxLen, scored exactly as search scores them, best first. */
function bruteForce(table: Table, V: number, input: number, maxLen: number, lengthPenalty: number): Hypothesis[] {
  const out: Hypothesis[] = [];
  const walk = (tokens: number[], logProb: number, prev: number): void => {
    const row = table(input, tokens.length, prev);
    const closed = logProb + row[EOS];
    out.push({
      tokens: tokens.slice(),
      logProb: closed,
      score: lengthNormalizedScore(closed, tokens.length, lengthPenalty),
    });
    if (tokens.length === maxLen) return;
    for (let v = 3; v < V; v++) walk([...tokens, v], logProb + row[v], v);
  };
  walk([], 0, BOS);
  return out.sort((a, b) => b.score - a.score);
}

/**
 * Beam search the slow, obvious way (fairseq semantics): score every (row, token) candidate of an
 * input, sort them all, finish </s> candidates ranked within the top K, keep the K best others.
 */
function naiveBeam(
  table: Table,
  V: number,
  input: number,
  K: number,
  maxLen: number,
  lengthPenalty: number,
  nBest: number,
): Hypothesis[] {
  const fin: Hypothesis[] = [];
  const close = (tokens: number[], logProb: number) =>
    fin.push({ tokens, logProb, score: lengthNormalizedScore(logProb, tokens.length, lengthPenalty) });
  let live = [{ tokens: [] as number[], logProb: 0 }];
  for (let t = 0; ; t++) {
    const rows = live.map((h) => table(input, t, h.tokens.length ? h.tokens[h.tokens.length - 1] : BOS));
    if (t >= maxLen) {
      live.forEach((h, j) => close(h.tokens, h.logProb + rows[j][EOS]));
      break;
    }
    const cands: { j: number; v: number; s: number }[] = [];
    live.forEach((h, j) => {
      for (let v = 0; v < V; v++) {
        if (v === PAD || v === BOS) continue;
        const s = h.logProb + rows[j][v];
        cands.push({ j, v, s: Number.isNaN(s) ? -Infinity : s });
      }
    });
    cands.sort((a, b) => b.s - a.s || a.j - b.j || a.v - b.v);
    const finite = cands.filter((c) => c.s > -Infinity);
    finite.slice(0, K).forEach((c) => c.v === EOS && close(live[c.j].tokens, c.s));
    if (fin.length >= K) break;
    const next = finite.filter((c) => c.v !== EOS).slice(0, K);
    if (next.length === 0) {
      if (fin.length === 0) live.forEach((h, j) => close(h.tokens, h.logProb + rows[j][EOS]));
      break;
    }
    live = next.map((c) => ({ tokens: [...live[c.j].tokens, c.v], logProb: c.s }));
  }
  return fin.sort((a, b) => b.score - a.score).slice(0, nBest);
}

function assertSortedDistinct(list: Hypothesis[]): void {
  for (let i = 1; i < list.length; i++) assert.ok(list[i - 1].score >= list[i].score, 'n-best not sorted by score');
  assert.equal(new Set(list.map((h) => h.tokens.join(' '))).size, list.length, 'n-best has duplicates');
}

function assertSameHypotheses(actual: Hypothesis[], expected: Hypothesis[]): void {
  assert.deepEqual(
    actual.map((h) => h.tokens),
    expected.map((h) => h.tokens),
  );
  actual.forEach((h, i) => {
    assert.ok(Math.abs(h.logProb - expected[i].logProb) < 1e-9, `logProb ${h.logProb} vs ${expected[i].logProb}`);
    assert.ok(Math.abs(h.score - expected[i].score) < 1e-9, `score ${h.score} vs ${expected[i].score}`);
  });
}

describe('topK', () => {
  function reference(values: Float32Array | Float64Array, k: number, start = 0, end = values.length) {
    const items = Array.from(values.subarray(start, end), (v, i) => ({ i, v: Number.isNaN(v) ? -Infinity : v }));
    items.sort((a, b) => b.v - a.v || a.i - b.i);
    return items.slice(0, k);
  }

  it('matches a full sort, ties to the lower index, NaN as -Infinity', () => {
    const r = rng(7);
    for (let trial = 0; trial < 300; trial++) {
      const n = 1 + Math.floor(r() * 60);
      // Coarse values force many ties; sprinkle NaN and -Infinity.
      const values = Float32Array.from({ length: n }, () => {
        const u = r();
        return u < 0.05 ? NaN : u < 0.1 ? -Infinity : Math.round(r() * 8) - 4;
      });
      const k = Math.floor(r() * (n + 3));
      const got = topK(values, k);
      const want = reference(values, k);
      assert.deepEqual(
        Array.from(got.indices),
        want.map((x) => x.i),
      );
      assert.deepEqual(
        Array.from(got.values),
        want.map((x) => x.v),
      );
    }
  });

  it('selects within a slice with indices relative to its start, without allocating', () => {
    const r = rng(11);
    const V = 1000;
    const values = Float32Array.from({ length: 3 * V }, () => r());
    const idx = new Int32Array(6);
    const val = new Float64Array(6);
    for (let row = 0; row < 3; row++) {
      const m = topKInto(values, 6, idx, val, row * V, (row + 1) * V);
      assert.equal(m, 6);
      assert.deepEqual(
        Array.from(idx),
        reference(values, 6, row * V, (row + 1) * V).map((x) => x.i),
      );
    }
    assert.equal(topKInto(values, 0, idx, val, 0, V), 0);
    assert.throws(() => topKInto(values, 7, idx, val, 0, V), RangeError);
    assert.throws(() => topKInto(values, 2, idx, val, 0, 3 * V + 1), RangeError);
  });

  it('argmax skips NaN and prefers the lower index', () => {
    assert.equal(argmax(Float32Array.from([NaN, 1, 3, 3]), 0, 4), 2);
    assert.equal(argmax(Float32Array.from([9, -Infinity, NaN, -Infinity]), 1, 4), 0);
  });
});

describe('logits processors', () => {
  it('suppressTokens and minLength mask per row', () => {
    const lp = new Float32Array(2 * 4);
    suppressTokens([0, 1])(lp, 2, 4, [[], []]);
    minLength(2, 1)(lp, 2, 4, [[], [5]]);
    assert.deepEqual(Array.from(lp), [-Infinity, -Infinity, -Infinity, 0, -Infinity, -Infinity, 0, 0]);
    assert.throws(() => minLength(2, -1), /minLen/);
  });
});

describe('greedy search', () => {
  it('equals argmax chaining over the table', async () => {
    const V = 12;
    const table = randomTable(V, 1);
    const model = new TableModel(V, table);
    const out = await generate(model, rowsFor([0, 1, 2, 3, 4]), 5, { maxLen: 8 });
    out.forEach((list, input) => {
      assert.equal(list.length, 1);
      assertSameHypotheses(list, [greedyByHand(table, V, input, 8)]);
    });
  });

  it('is what beam search with beam 1 finds', async () => {
    for (const seed of [2, 3, 4]) {
      const V = 10;
      const table = randomTable(V, seed, 1.5);
      const inputs = [0, 1, 2, 3, 4, 5];
      const opts = { maxLen: 12, lengthPenalty: 0.7, minLen: 1, sourceLengths: [1, 5, 2, 0, 3, 4] };
      const greedy = await greedySearch(new TableModel(V, table), rowsFor(inputs), inputs.length, opts);
      const beam1 = await beamSearch(new TableModel(V, table), rowsFor(inputs), inputs.length, { ...opts, beam: 1 });
      greedy.forEach((list, b) => assertSameHypotheses(beam1[b], list));
    }
  });
});

describe('beam search', () => {
  // <pad> <s> </s> a b
  const A = 3;
  const B_ = 4;
  const trap = markov(5, {
    [BOS]: { [A]: 0.6, [B_]: 0.4 - 2e-6 },
    [A]: { [A]: 0.4, [B_]: 0.3, [EOS]: 0.3 },
    [B_]: { [EOS]: 0.99 },
  });

  it('finds the sequence greedy misses', async () => {
    const greedy = await generate(new TableModel(5, trap), rowsFor([0]), 1, { maxLen: 3 });
    const beam = await generate(new TableModel(5, trap), rowsFor([0]), 1, { maxLen: 3, beam: 2 });
    assert.deepEqual(greedy[0][0].tokens, [A, A, A]);
    assert.deepEqual(beam[0][0].tokens, [B_]);
    assert.ok(beam[0][0].score > greedy[0][0].score);
    assert.ok(Math.abs(beam[0][0].logProb - Math.log(0.4 * 0.99)) < 1e-5);
  });

  it('with K = V^L finds the exhaustive-search optimum and n-best', async () => {
    for (const [V, L] of [
      [5, 3],
      [6, 4],
    ]) {
      for (const lengthPenalty of [0, 1, 2]) {
        const table = randomTable(V, 10 + V, 2);
        const inputs = [0, 1, 2];
        const K = V ** L;
        const all = inputs.map((input) => bruteForce(table, V, input, L, lengthPenalty));
        const nBest = all[0].length;
        const out = await generate(new TableModel(V, table), rowsFor(inputs), inputs.length, {
          beam: K,
          nBest,
          maxLen: L,
          lengthPenalty,
        });
        out.forEach((list, b) => assertSameHypotheses(list, all[b]));
      }
    }
  });

  it('matches a naive full-sort beam search on random tables', async () => {
    for (let seed = 100; seed < 160; seed++) {
      const V = 5 + (seed % 4);
      const K = 2 + (seed % 3);
      const lengthPenalty = [0, 1, 0.5][seed % 3];
      // Low temperature keeps </s> competitive so it often takes a top-K slot.
      const table = randomTable(V, seed, 1);
      const inputs = [0, 1, 2];
      const out = await generate(new TableModel(V, table), rowsFor(inputs), inputs.length, {
        beam: K,
        nBest: K,
        maxLen: 6,
        lengthPenalty,
      });
      inputs.forEach((b) => assertSameHypotheses(out[b], naiveBeam(table, V, b, K, 6, lengthPenalty, K)));
    }
  });

  it('decodes each input of a batch exactly as it would alone', async () => {
    const V = 9;
    const table = randomTable(V, 21, 1.2);
    const inputs = [0, 1, 2, 3, 4];
    const sourceLengths = [3, 0, 6, 1, 2];
    for (const opts of [
      { beam: 1 },
      { beam: 3, nBest: 3 },
      { beam: 4, nBest: 2, lengthPenalty: 0 },
      { beam: 5, nBest: 5, minLen: 2, lengthPenalty: 1.3 },
    ]) {
      const common = { ...opts, maxLen: 9, maxLenA: 1, maxLenB: 2 };
      const batched = await generate(new TableModel(V, table), rowsFor(inputs), inputs.length, {
        ...common,
        sourceLengths,
      });
      for (const b of inputs) {
        const alone = await generate(new TableModel(V, table), rowsFor([b]), 1, {
          ...common,
          sourceLengths: [sourceLengths[b]],
        });
        assert.deepEqual(batched[b], alone[0], `input ${b} with ${JSON.stringify(opts)}`);
      }
    }
  });

  it('returns sorted, distinct n-best lists of the requested size', async () => {
    const V = 8;
    const out = await generate(new TableModel(V, randomTable(V, 5)), rowsFor([0, 1, 2, 3]), 4, {
      beam: 6,
      nBest: 4,
      maxLen: 7,
    });
    for (const list of out) {
      assert.equal(list.length, 4);
      assertSortedDistinct(list);
      for (const h of list) {
        assert.ok(Number.isFinite(h.logProb));
        assert.ok(h.tokens.every((t) => t >= 3 && t < V));
        assert.ok(Math.abs(h.score - h.logProb / (h.tokens.length + 1)) < 1e-12);
      }
    }
  });

  it('enforces maxLen and the per-input maxLenA * srcLen + maxLenB cap', async () => {
    const V = 6;
    // </s> is nearly impossible, so every output runs to its cap.
    const chatty = markov(V, Object.fromEntries([BOS, 3, 4, 5].map((p) => [p, { [EOS]: 1e-9 }])));
    for (const beam of [1, 3]) {
      const model = new TableModel(V, chatty);
      const out = await generate(model, rowsFor([0, 1, 2, 3]), 4, {
        beam,
        nBest: beam,
        maxLen: 6,
        maxLenA: 0.5,
        maxLenB: 1,
        sourceLengths: [0, 3, 8, 40],
      });
      const caps = [1, 2, 5, 6];
      out.forEach((list, b) => list.forEach((h) => assert.equal(h.tokens.length, caps[b])));
      assert.equal(model.stepRows.length, 7, 'one step per token plus the forced </s>');
      const plain = await generate(new TableModel(V, chatty), rowsFor([0]), 1, { beam, maxLen: 4 });
      assert.equal(plain[0][0].tokens.length, 4);
    }
    const none = await generate(new TableModel(V, chatty), rowsFor([0]), 1, { beam: 2, maxLen: 0 });
    assert.deepEqual(
      none[0].map((h) => h.tokens),
      [[]],
    );
  });

  it('drops finished inputs from the batch with shrinking reorders', async () => {
    const V = 7;
    const chatty = markov(V, Object.fromEntries([BOS, 3, 4, 5, 6].map((p) => [p, { [EOS]: 1e-9 }])));
    const opts = { maxLen: 10, maxLenA: 1, maxLenB: 0, sourceLengths: [1, 2, 3] };

    const beam = new TableModel(V, chatty);
    await generate(beam, rowsFor([0, 1, 2]), 3, { ...opts, beam: 2 });
    // Expand 3 inputs to 3*2 rows, then lose 2 rows each time an input hits its cap.
    assert.deepEqual(beam.stepRows, [3, 6, 4, 2]);
    assert.deepEqual(beam.reorderRows, [6, 4, 2]);

    const greedy = new TableModel(V, chatty);
    await generate(greedy, rowsFor([0, 1, 2]), 3, opts);
    // No reorder while every row continues; one per finished input.
    assert.deepEqual(greedy.stepRows, [3, 3, 2, 1]);
    assert.deepEqual(greedy.reorderRows, [2, 1]);
  });

  it('stops an input once it has K finished hypotheses', async () => {
    const V = 6;
    const eager = markov(V, Object.fromEntries([BOS, 3, 4, 5].map((p) => [p, { [EOS]: 0.9 }])));
    const model = new TableModel(V, eager);
    const out = await generate(model, rowsFor([0]), 1, { beam: 2, nBest: 2, maxLen: 50 });
    assert.equal(out[0].length, 2);
    assert.ok(model.stepRows.length <= 3, `ran ${model.stepRows.length} steps`);
  });

  it('length penalty changes which hypothesis ranks first', async () => {
    // <pad> <s> </s> x y z w: [x] has the better total, [y z w] the better per-token average.
    const [X, Y, Z, W] = [3, 4, 5, 6];
    const table = markov(7, {
      [BOS]: { [X]: Math.exp(-0.6), [Y]: Math.exp(-0.92) },
      [X]: { [EOS]: Math.exp(-0.4) },
      [Y]: { [Z]: 0.9 },
      [Z]: { [W]: 0.9 },
      [W]: { [EOS]: 0.7 },
    });
    const raw = await generate(new TableModel(7, table), rowsFor([0]), 1, {
      beam: 8,
      nBest: 2,
      maxLen: 4,
      lengthPenalty: 0,
    });
    const norm = await generate(new TableModel(7, table), rowsFor([0]), 1, {
      beam: 8,
      nBest: 2,
      maxLen: 4,
      lengthPenalty: 1,
    });
    assert.deepEqual(
      raw[0].map((h) => h.tokens),
      [[X], [Y, Z, W]],
    );
    assert.deepEqual(
      norm[0].map((h) => h.tokens),
      [[Y, Z, W], [X]],
    );
    assertSameHypotheses(raw[0], bruteForce(table, 7, 0, 4, 0).slice(0, 2));
    assertSameHypotheses(norm[0], bruteForce(table, 7, 0, 4, 1).slice(0, 2));
  });
});

describe('special tokens, minLen and bad log-probabilities', () => {
  it('never emits <pad> or <s>, even when the model prefers them', async () => {
    const V = 6;
    const loud = markov(V, Object.fromEntries([BOS, 3, 4, 5].map((p) => [p, { [PAD]: 0.5, [BOS]: 0.3 }])));
    for (const beam of [1, 3]) {
      const out = await generate(new TableModel(V, loud), rowsFor([0, 1]), 2, { beam, nBest: beam, maxLen: 5 });
      for (const h of out.flat()) assert.ok(h.tokens.every((t) => t !== PAD && t !== BOS));
    }
  });

  it('takes pad from the options when the model has none', async () => {
    const V = 6;
    const loud = markov(V, Object.fromEntries([BOS, 3, 4, 5].map((p) => [p, { 3: 0.6 }])));
    const base = new TableModel(V, loud);
    const model: StepModel<Row[]> = {
      vocabSize: V,
      bos: BOS,
      eos: EOS,
      step: (p, s) => base.step(p, s),
      reorder: (s, o) => base.reorder(s, o),
    };
    const out = await generate(model, rowsFor([0]), 1, { pad: 3, maxLen: 4 });
    assert.ok(out[0][0].tokens.every((t) => t !== 3));
  });

  it('never emits <unk> unless allowUnk, whether the id comes from the model or the options', async () => {
    const V = 6;
    const UNK = 3;
    const unkLover = markov(V, Object.fromEntries([BOS, 3, 4, 5].map((p) => [p, { [UNK]: 0.7 }])));
    const base = new TableModel(V, unkLover);
    const withUnk = Object.assign(Object.create(base) as TableModel, { unk: UNK });
    for (const beam of [1, 3]) {
      const [forbidden] = await generate(withUnk, rowsFor([0]), 1, { beam, maxLen: 4 });
      assert.ok(forbidden![0]!.tokens.every((t) => t !== UNK));
      const [viaOptions] = await generate(base, rowsFor([0]), 1, { beam, maxLen: 4, unk: UNK });
      assert.ok(viaOptions![0]!.tokens.every((t) => t !== UNK));
      const [allowed] = await generate(withUnk, rowsFor([0]), 1, { beam, maxLen: 4, allowUnk: true });
      assert.ok(allowed![0]!.tokens.includes(UNK), 'the model prefers <unk>, and it is allowed');
    }
    await assert.rejects(generate(base, rowsFor([0]), 1, { unk: V }), RangeError);
  });

  it('minLen blocks </s> until enough tokens are out', async () => {
    const V = 6;
    const eager = markov(V, Object.fromEntries([BOS, 3, 4, 5].map((p) => [p, { [EOS]: 0.9 }])));
    for (const beam of [1, 3]) {
      const out = await generate(new TableModel(V, eager), rowsFor([0, 1]), 2, {
        beam,
        nBest: beam,
        minLen: 3,
        maxLen: 10,
      });
      for (const h of out.flat()) assert.ok(h.tokens.length >= 3, `got ${h.tokens.length} tokens`);
      // A short per-input cap does not override minLen.
      const capped = await generate(new TableModel(V, eager), rowsFor([0]), 1, {
        beam,
        minLen: 3,
        maxLenA: 0,
        maxLenB: 1,
        sourceLengths: [4],
      });
      assert.equal(capped[0][0].tokens.length, 3);
    }
  });

  it('runs caller logits processors with each row history', async () => {
    const V = 6;
    const seen: number[] = [];
    const banThree: LogitsProcessor = (lp, rows, vocab, histories) => {
      seen.push(histories.slice(0, rows).reduce((n, h) => n + h.length, 0));
      for (let r = 0; r < rows; r++) lp[r * vocab + 3] = -Infinity;
    };
    const table = randomTable(V, 33);
    for (const beam of [1, 2]) {
      const out = await generate(new TableModel(V, table), rowsFor([0, 1]), 2, {
        beam,
        maxLen: 5,
        logitsProcessors: [banThree],
      });
      for (const h of out.flat()) assert.ok(!h.tokens.includes(3));
    }
    assert.equal(seen[0], 0);
  });

  it('treats NaN and -Infinity as impossible', async () => {
    const V = 7;
    const base = randomTable(V, 44);
    const broken: Table = (input, pos, prev) => {
      const row = base(input, pos, prev).slice();
      row[3] = NaN;
      row[4] = -Infinity;
      if (pos === 0) row[5] = NaN;
      return row;
    };
    for (const beam of [1, 3]) {
      const out = await generate(new TableModel(V, broken), rowsFor([0, 1]), 2, { beam, nBest: beam, maxLen: 6 });
      for (const h of out.flat()) {
        assert.ok(Number.isFinite(h.logProb) && Number.isFinite(h.score));
        assert.ok(h.tokens.every((t) => t === 6 || (t === 5 && h.tokens.indexOf(t) > 0)));
      }
    }
  });

  it('still answers every input when the model allows nothing', async () => {
    const V = 5;
    const nothing: Table = () => new Float32Array(V).fill(-Infinity);
    for (const beam of [1, 3]) {
      const out = await generate(new TableModel(V, nothing), rowsFor([0, 1]), 2, { beam, maxLen: 4 });
      for (const list of out) {
        assert.equal(list.length, 1);
        assert.deepEqual(list[0].tokens, []);
        assert.equal(list[0].logProb, -Infinity);
      }
    }
  });
});

describe('validation', () => {
  const model = new TableModel(5, randomTable(5, 1));
  it('rejects nBest > beam naming nBest', async () => {
    await assert.rejects(
      generate(model, rowsFor([0]), 1, { beam: 2, nBest: 3 }),
      (e: Error) => e instanceof RangeError && /nBest/.test(e.message),
    );
    await assert.rejects(
      generate(model, rowsFor([0]), 1, { nBest: 2 }),
      (e: Error) => e instanceof RangeError && /nBest/.test(e.message),
    );
  });

  it('names the bad argument', async () => {
    const cases: [object, RegExp, ErrorConstructor][] = [
      [{ beam: 0 }, /beam/, RangeError],
      [{ beam: 1.5 }, /beam/, TypeError],
      [{ maxLen: -1 }, /maxLen/, RangeError],
      [{ minLen: 5, maxLen: 4 }, /minLen/, RangeError],
      [{ lengthPenalty: NaN }, /lengthPenalty/, TypeError],
      [{ sourceLengths: [1, 2] }, /sourceLengths/, RangeError],
      [{ sourceLengths: [-1] }, /sourceLengths\[0\]/, RangeError],
      [{ pad: 9 }, /pad/, RangeError],
      [{ logitsProcessors: [42] }, /logitsProcessors\[0\]/, TypeError],
    ];
    for (const [opts, pattern, kind] of cases) {
      await assert.rejects(
        generate(model, rowsFor([0]), 1, opts),
        (e: Error) => e instanceof kind && pattern.test(e.message),
        JSON.stringify(opts),
      );
    }
    await assert.rejects(generate(model, [], -1), /batchSize/);
  });

  it('rejects a model that returns the wrong number of log-probabilities', async () => {
    const bad: StepModel<null> = {
      vocabSize: 5,
      bos: BOS,
      eos: EOS,
      step: async () => ({ logProbs: new Float32Array(3), state: null }),
      reorder: (s) => s,
    };
    await assert.rejects(generate(bad, null, 2), /logProbs/);
  });

  it('decodes an empty batch without calling the model', async () => {
    const m = new TableModel(5, randomTable(5, 1));
    assert.deepEqual(await generate(m, [], 0, { beam: 3 }), []);
    assert.equal(m.stepRows.length, 0);
  });

  it('BeamSearch can be driven without a model', () => {
    const search = new BeamSearch(
      1,
      resolveSearchOptions(new TableModel(5, randomTable(5, 1)), 1, { beam: 2, maxLen: 1 }),
    );
    const lp = Float32Array.from([-9, -9, -3, -0.1, -1]);
    const order = search.step(lp);
    assert.deepEqual(Array.from(order!), [0, 0]);
    assert.deepEqual(Array.from(search.prevTokens()), [3, 4]);
    assert.deepEqual(search.histories, [[3], [4]]);
  });
});
