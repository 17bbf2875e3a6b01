/**
 * `frost eval --context line` (train/lm/lm-evaluate.ts scoreLines): every line scored from a fresh
 * state, as `/v1/score` scores a text, however the lines are batched and padded; and unlike
 * `--context stream`, no line's score depends on the line before it.
 */
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { before, test } from 'node:test';
import { SPECIALS } from '../core/vocab.ts';
import { buildLanguageModel } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { streamIds } from '../train/data/lm-stream.ts';
import { scoreLines, scoreStream } from '../train/lm/lm-evaluate.ts';

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
});

const V = 12;
const eos = SPECIALS.eos.id;
/** Lines of 1 to 9 words over ids 4..V-1 (after the specials). */
const lines = Array.from({ length: 23 }, (_, i) =>
  Array.from({ length: 1 + ((i * 5) % 9) }, (_, t) => 4 + ((i * 7 + t * 3) % (V - 4))),
);

function model() {
  const config = { embedding: 16, hidden: 24, layers: 2, dropoutEmbedding: 0, dropoutHidden: 0, dropout: 0 };
  return buildLanguageModel('lstm-lm', config, V, { name: 'learned' }, 3);
}

/** One line alone from a zero state: `</s>`, then its tokens, predicting each token and the final `</s>`. */
function lineAlone(m: ReturnType<typeof model>, line: number[]): Float32Array {
  const ids = [eos, ...line, eos];
  const state = m.initialState(1);
  const out = m.targetLogProbs(
    { B: 1, T: ids.length - 1, inputs: Int32Array.from(ids.slice(0, -1)), targets: Int32Array.from(ids.slice(1)) },
    state,
  );
  tf.dispose([...Object.values(state), ...Object.values(out.state)]);
  return out.logProbs;
}

test('every line scores as it does alone from a fresh state, in batches of any size', () => {
  const m = model();
  try {
    const ids = streamIds(lines, eos);
    const expected = lines.flatMap((l) => Array.from(lineAlone(m, l)));
    for (const rows of [1, 4, 64]) {
      const scored = scoreLines(m, ids, eos, rows);
      assert.equal(scored.logProbs.length, ids.length, 'every token predicted once, the first included');
      assert.deepEqual(Array.from(scored.targets), Array.from(ids));
      const worst = expected.reduce((w, v, i) => Math.max(w, Math.abs(v - scored.logProbs[i])), 0);
      assert.ok(worst < 1e-5, `rows ${rows}: max |Δ log p| ${worst}`);
    }
  } finally {
    m.params.dispose();
  }
});

test("a line's score does not depend on the line before it (it does with the state carried)", () => {
  const m = model();
  try {
    const a = streamIds([lines[3], lines[5]], eos);
    const b = streamIds([lines[8], lines[5]], eos);
    const last = (ids: Int32Array, s: Float32Array) => s.subarray(s.length - (lines[5].length + 1));
    assert.deepEqual(last(a, scoreLines(m, a, eos).logProbs), last(b, scoreLines(m, b, eos).logProbs));
    // The stream reading predicts from position 1 on, so its last tokens line up the same way.
    const carried = (ids: Int32Array) => last(ids, scoreStream(m, ids, 1, 4).logProbs);
    assert.notDeepEqual(carried(a), carried(b));
  } finally {
    m.params.dispose();
  }
});
