/**
 * Search from a model's top-k candidates (StepModel.stepTop) must pick exactly what search over whole
 * rows picks: same hypotheses, scores and log-probs, with the built-in processors (<pad>/<s>/<unk>
 * suppression, minLen), ties, masked tokens on top, and rows the candidates cannot decide (NaN,
 * -Infinity), which fall back to whole rows.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generate } from '../core/decode/generate.ts';
import { maskedIdsOf, minLength, suppressTokens } from '../core/decode/logits-processors.ts';
import type { Hypothesis, StepModel, TopCandidates } from '../core/decode/types.ts';
import { SeededRandom } from '../core/random.ts';

const PAD = 0;
const UNK = 1;
const BOS = 2;
const EOS = 3;

interface Row {
  input: number;
  pos: number;
  prev: number;
}

/** A seeded Markov decoder over rows; `rowHook` may rewrite a row's log-probs (NaN, -Infinity, ties). */
class Candidates implements StepModel<Row[]> {
  readonly bos = BOS;
  readonly eos = EOS;
  readonly pad = PAD;
  readonly unk = UNK;
  denseSteps = 0;
  topSteps = 0;
  readonly topK: number | undefined;
  readonly stepTop: StepModel<Row[]>['stepTop'];

  constructor(
    readonly vocabSize: number,
    topK: number | undefined,
    private readonly rowHook: (lp: Float32Array, row: Row) => void = () => undefined,
  ) {
    this.topK = topK;
    this.stepTop = topK === undefined ? undefined : (prev, state) => this.top(prev, state, topK);
  }

  /** Log-softmax of seeded logits; coarse values (multiples of 1/4) so that ties occur. */
  private row(row: Row): Float32Array {
    const rng = new SeededRandom(row.input * 7919 + row.pos * 104729 + row.prev, 'top-candidates');
    const logits = Array.from({ length: this.vocabSize }, () => Math.floor(rng.next() * 12) / 4);
    // Make the specials likely, so masking them matters.
    logits[EOS] += 1.5;
    logits[UNK] += 2;
    logits[PAD] += 2;
    const max = Math.max(...logits);
    const lse = max + Math.log(logits.reduce((s, x) => s + Math.exp(x - max), 0));
    const lp = Float32Array.from(logits, (x) => x - lse);
    this.rowHook(lp, row);
    return lp;
  }

  async step(prev: Int32Array, state: Row[]): Promise<{ logProbs: Float32Array; state: Row[] }> {
    this.denseSteps++;
    const V = this.vocabSize;
    const logProbs = new Float32Array(state.length * V);
    state.forEach((row, r) => logProbs.set(this.row({ ...row, prev: prev[r] }), r * V));
    return { logProbs, state: this.next(prev, state) };
  }

  /** What ONNX TopK returns: descending, equal values by lower index, NaN wherever it lands. */
  private async top(prev: Int32Array, state: Row[], k: number): Promise<{ top: TopCandidates; state: Row[] }> {
    this.topSteps++;
    const logProbs = new Float32Array(state.length * k);
    const tokens = new Int32Array(state.length * k);
    state.forEach((row, r) => {
      const lp = this.row({ ...row, prev: prev[r] });
      const ids = Array.from(lp.keys()).sort((a, b) => {
        const [x, y] = [lp[a], lp[b]];
        if (x !== x || y !== y) return x !== x ? -1 : 1; // NaN first: the worst case for search
        return y - x || a - b;
      });
      for (let j = 0; j < k; j++) {
        tokens[r * k + j] = ids[j];
        logProbs[r * k + j] = lp[ids[j]];
      }
    });
    return { top: { k, logProbs, tokens }, state: this.next(prev, state) };
  }

  private next(prev: Int32Array, state: Row[]): Row[] {
    return state.map((row, r) => ({ input: row.input, pos: row.pos + 1, prev: prev[r] }));
  }

  reorder(state: Row[], order: Int32Array): Row[] {
    return Array.from(order, (i) => state[i]);
  }
}

function initial(batch: number): Row[] {
  return Array.from({ length: batch }, (_, input) => ({ input, pos: 0, prev: BOS }));
}

async function both(
  opts: Parameters<typeof generate>[3],
  hook?: (lp: Float32Array, row: Row) => void,
  batch = 6,
  vocab = 40,
): Promise<{ whole: Hypothesis[][]; top: Hypothesis[][]; model: Candidates }> {
  const wholeModel = new Candidates(vocab, undefined, hook);
  const topModel = new Candidates(vocab, 16, hook);
  const whole = await generate(wholeModel, initial(batch), batch, opts);
  const top = await generate(topModel, initial(batch), batch, opts);
  return { whole, top, model: topModel };
}

describe('search from top-k candidates', () => {
  for (const beam of [1, 3, 5]) {
    it(`beam ${beam}: the same hypotheses as whole rows, with <unk>/<pad> masked and minLen`, async () => {
      for (const opts of [
        { maxLen: 9 },
        { minLen: 6, maxLen: 9 },
        { minLen: 9, maxLen: 9 },
        { maxLen: 7, nBest: beam },
      ]) {
        const { whole, top, model } = await both({ beam, ...opts });
        assert.deepEqual(top, whole, JSON.stringify(opts));
        // Every step but the last (an input at its cap needs whole rows) used the candidates.
        assert.ok(model.topSteps > 0, 'stepTop was used');
        assert.ok(model.denseSteps <= model.topSteps, `${model.denseSteps} whole-row steps, ${model.topSteps} top-k`);
      }
    });
  }

  it('allowUnk lets <unk> through the candidates as it does through whole rows', async () => {
    const { whole, top } = await both({ beam: 1, maxLen: 8, allowUnk: true });
    assert.deepEqual(top, whole);
    assert.ok(
      top.some(([h]) => h.tokens.includes(UNK)),
      'the model favours <unk>, so some output has it',
    );
  });

  it('rows whose candidates are NaN or -Infinity fall back to whole rows and still match', async () => {
    // minLen keeps every input alive until these steps, one step each.
    const hook = (lp: Float32Array, row: Row) => {
      if (row.input === 1 && row.pos === 0) lp.fill(NaN);
      if (row.input === 2 && row.pos === 1) lp.fill(-Infinity);
      // Only masked tokens are finite: nothing possible once they are masked.
      if (row.input === 3 && row.pos === 2) {
        lp.fill(-Infinity);
        lp[PAD] = lp[UNK] = -0.1;
      }
    };
    for (const beam of [1, 4]) {
      const { whole, top, model } = await both({ beam, minLen: 3, maxLen: 8 }, hook);
      assert.deepEqual(top, whole, `beam ${beam}`);
      assert.ok(model.denseSteps >= 3, `beam ${beam}: fell back to whole rows (${model.denseSteps} steps)`);
      assert.equal(top[1][0].logProb, -Infinity, 'input 1 could emit nothing');
    }
  });

  it('uses whole rows when the candidates cannot cover the beam and the masked tokens', async () => {
    // beam 14 needs 15 candidates per row, plus <pad>, <s>, <unk>: more than k = 16.
    const { whole, top, model } = await both({ beam: 14, maxLen: 5 }, undefined, 3);
    assert.deepEqual(top, whole);
    assert.equal(model.topSteps, 0);
  });

  it('uses whole rows when a caller adds its own processor', async () => {
    const boost = (lp: Float32Array, rows: number, vocab: number) => {
      for (let r = 0; r < rows; r++) lp[r * vocab + 5] += 10;
    };
    const { whole, top, model } = await both({ beam: 2, maxLen: 6, logitsProcessors: [boost] });
    assert.deepEqual(top, whole);
    assert.equal(model.topSteps, 0, 'a processor that may raise values rules the candidates out');
    assert.ok(top.every(([h]) => h.tokens.every((t) => t === 5)));
  });
});

describe('maskedIdsOf', () => {
  it('unions the built-in processors by output length, and refuses unknown ones', () => {
    const masked = maskedIdsOf([suppressTokens([PAD, BOS, UNK]), minLength(EOS, 2)])!;
    assert.deepEqual([...masked(0)].sort(), [PAD, UNK, BOS, EOS].sort());
    assert.deepEqual([...masked(2)].sort(), [PAD, UNK, BOS].sort());
    assert.equal(maskedIdsOf([suppressTokens([PAD]), () => undefined]), null);
  });
});
