import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { averageRanks, pearson, spearman } from '../core/metrics/spearman.ts';
import { cosineSimilarity, rowNorms } from '../core/metrics/vector-similarity.ts';
import { RARE_WORD_THRESHOLD, rareWordRate, vocabularyUsage } from '../core/metrics/word-usage.ts';

const close = (actual: number, expected: number, eps = 1e-12) =>
  assert.ok(Math.abs(actual - expected) <= eps, `expected ${expected}, got ${actual}`);

describe('Spearman rank correlation', () => {
  test('ties get the mean of the ranks they span', () => {
    assert.deepEqual([...averageRanks([10, 20, 20, 30])], [1, 2.5, 2.5, 4]);
    assert.deepEqual([...averageRanks([3, 1, 3, 3])], [3, 1, 3, 3]);
    assert.deepEqual([...averageRanks([5, 4, 3, 2, 1])], [5, 4, 3, 2, 1]);
    assert.throws(() => averageRanks([1, NaN]), /values\[1\] is NaN/);
  });

  test('a hand-computed value with a tie (scipy.stats.spearmanr gives the same)', () => {
    // ranks y = [1, 2, 3.5, 5, 3.5]; Σdx·dy = 8, Σdx² = 10, Σdy² = 9.5; ρ = 8 / √95
    close(spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 8 / Math.sqrt(95));
    close(spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 0.8207826816681233);
  });

  test('only the order matters: any increasing relation is 1, any decreasing one -1', () => {
    close(spearman([1, 2, 3, 4], [1, 4, 9, 100]), 1);
    close(spearman([1, 2, 3, 4], [100, 9, 4, 1]), -1);
    // Pearson sees the same data as not quite linear
    assert.ok(pearson([1, 2, 3, 4], [1, 4, 9, 100]) < 0.9);
  });

  test('a constant variable has no correlation (NaN), as in scipy', () => {
    assert.ok(Number.isNaN(spearman([1, 2, 3], [7, 7, 7])));
    assert.ok(Number.isNaN(pearson([2, 2], [1, 5])));
  });

  test('refuses mismatched or too short samples, naming the problem', () => {
    assert.throws(() => spearman([1, 2], [1, 2, 3]), /x has 2 values, y has 3/);
    assert.throws(() => pearson([1], [1]), /at least 2 pairs, got 1/);
  });
});

describe('vector similarity', () => {
  test('cosine of hand-picked vectors', () => {
    close(cosineSimilarity([1, 0], [0, 1]), 0);
    close(cosineSimilarity([1, 2, 2], [2, 4, 4]), 1);
    close(cosineSimilarity([1, 2], [-1, -2]), -1);
    close(cosineSimilarity([3, 4], [4, 3]), 24 / 25);
    assert.ok(Number.isNaN(cosineSimilarity([0, 0], [1, 1])));
    assert.throws(() => cosineSimilarity([1], [1, 2]), /a has 1 values, b has 2/);
  });

  test('row norms of a row-major matrix', () => {
    const norms = rowNorms(new Float32Array([3, 4, 0, 0, 1, 1]), 3, 2);
    close(norms[0]!, 5);
    close(norms[1]!, 0);
    close(norms[2]!, Math.SQRT2, 1e-7);
    assert.throws(() => rowNorms([1, 2, 3], 2, 2), /3 values is not 2 x 2/);
  });
});

describe('vocabulary usage and rare words', () => {
  test('distinct words over all sentences', () => {
    assert.equal(vocabularyUsage([['a', 'b'], ['b', 'c'], []]), 3);
    assert.equal(vocabularyUsage([]), 0);
  });

  test('rare = fewer than 100 training occurrences, counted over produced tokens', () => {
    assert.equal(RARE_WORD_THRESHOLD, 100);
    const freq: Record<string, number> = { a: 150, b: 99, c: 100 };
    const frequencyOf = (w: string) => freq[w] ?? 0;
    // b twice (99 < 100) is rare, c (exactly 100) is not, a never is: 2 of 4 tokens
    assert.deepEqual(rareWordRate([['a', 'b', 'b'], ['c']], frequencyOf), { rare: 2, words: 4, rate: 0.5 });
    // a word never seen in training has frequency 0: rare
    assert.deepEqual(rareWordRate([['zzz', 'a']], frequencyOf), { rare: 1, words: 2, rate: 0.5 });
    // another threshold
    assert.deepEqual(rareWordRate([['a', 'b', 'c']], frequencyOf, 151), { rare: 3, words: 3, rate: 1 });
    assert.ok(Number.isNaN(rareWordRate([[]], frequencyOf).rate));
  });
});
