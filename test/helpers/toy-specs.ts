/**
 * Toy run specs (cachedToyRun, cachedToyExport) that several test files train alike: naming them
 * once keeps their settings, hence their cache keys, equal, so one build serves all of those files.
 */
import type { ToyRunSpec } from './toy-fixtures.ts';

/**
 * rnn-attn with the learned head, 4 epochs of the full toy corpus: a model that reaches >= 90 test
 * BLEU (translation-e2e.test.ts) and that export-precision.test.ts converts to fp16 and int8.
 */
export const RNN_ATTN_LEARNED: ToyRunSpec = { head: 'learned', config: { epochs: 4 } };

/**
 * rnn-attn with the fixed-uniform head, one epoch of a 120-sentence corpus: a real trained model whose
 * head is regenerated from its seed (export-frozen.test.ts, browser-seed.test.ts), not a good one.
 */
export const RNN_ATTN_FIXED_UNIFORM_SHORT: ToyRunSpec = {
  head: 'fixed-uniform',
  corpus: { seed: 1, train: 120, val: 8, test: 8 },
  config: { epochs: 1, optim: { learningRate: 1e-3 } },
};
