/**
 * `<unk>` is not a word a captioner chose (issue #20, point 7): vocabulary usage and the rare-word
 * share of caption metrics leave it out, as the translation report does, while BLEU still sees it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluateCaptions } from '../core/metrics/caption-eval.ts';

test('vocabulary usage and the rare-word share exclude <unk>', () => {
  const trainCounts = new Map([
    ['a', 5000],
    ['dog', 800],
    ['runs', 300],
  ]);
  const refs = [['a dog runs'], ['a dog runs']];
  const withUnk = evaluateCaptions(['a <unk> dog', 'a dog runs <unk>'], refs, trainCounts);
  const rare = { threshold: 100, words: 0, share: 0, distinct: 0 };
  assert.deepEqual(withUnk.vocab, { distinctWords: 3, totalWords: 5, rare });
  const without = evaluateCaptions(['a dog', 'a dog runs'], refs, trainCounts);
  assert.deepEqual(withUnk.vocab, without.vocab);
  // BLEU scores the hypothesis as generated: the <unk> is an extra, unmatched word.
  assert.ok(withUnk.bleu1 < without.bleu1, `${withUnk.bleu1} < ${without.bleu1}`);
});
