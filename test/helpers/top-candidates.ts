/**
 * What the top-candidates tests share: a step model counted when it decodes from its top-k outputs,
 * the same model restricted to whole rows, and the check that the top-k outputs of one step are the
 * whole rows' top k in core/decode's order.
 */
import assert from 'node:assert/strict';
import { topK } from '../../core/decode/top-k.ts';
import type { StepModel } from '../../core/decode/types.ts';
import { SeededRandom } from '../../core/random.ts';
import type { DecoderState } from '../../core/runtime/row-state.ts';

/** `n` seeded source id sequences of 3-11 ids from [4, vocab), no specials. */
export function tokenSources(n: number, vocab: number, seed = 3): number[][] {
  const rng = new SeededRandom(seed, 'top-candidates-sources');
  return Array.from({ length: n }, () =>
    Array.from({ length: 3 + Math.floor(rng.next() * 9) }, () => 4 + Math.floor(rng.next() * (vocab - 4))),
  );
}

/** The step model with stepTop counted, and the same model restricted to whole rows. */
export function topAndWholeRows(model: StepModel<DecoderState>): {
  top: StepModel<DecoderState>;
  whole: StepModel<DecoderState>;
  topSteps: () => number;
} {
  let n = 0;
  const stepTop = model.stepTop!;
  return {
    top: { ...model, stepTop: (prev, s) => (n++, stepTop(prev, s)) },
    whole: { ...model, stepTop: undefined, topK: undefined },
    topSteps: () => n,
  };
}

/**
 * Runs `steps` decoder steps from `initial` (twice: once fetching the top-k outputs, once the whole
 * rows, feeding both the same seeded tokens) and asserts that every step's candidates are the whole
 * rows' top k: same tokens, same log-probabilities, in core/decode's order (descending, ties by id).
 */
export async function assertTopIsWholeRowsTopK(
  model: StepModel<DecoderState>,
  initial: () => Promise<DecoderState>,
  steps: number,
): Promise<void> {
  const k = model.topK!;
  const V = model.vocabSize;
  let [a, b] = [await initial(), await initial()];
  const rows = a.rows;
  let prev = Int32Array.from({ length: rows }, () => model.bos);
  const rng = new SeededRandom(5, 'top-candidates-steps');
  for (let t = 0; t < steps; t++) {
    const top = await model.stepTop!(prev, a);
    const whole = await model.step(prev, b);
    assert.equal(top.top.k, k);
    for (let r = 0; r < rows; r++) {
      const want = topK(whole.logProbs.subarray(r * V, (r + 1) * V), k);
      const where = `step ${t}, row ${r}`;
      assert.deepEqual(Array.from(top.top.tokens.subarray(r * k, (r + 1) * k)), Array.from(want.indices), where);
      assert.deepEqual(Array.from(top.top.logProbs.subarray(r * k, (r + 1) * k)), Array.from(want.values), where);
    }
    [a, b] = [top.state, whole.state];
    prev = Int32Array.from({ length: rows }, () => 4 + Math.floor(rng.next() * (V - 4)));
  }
}
