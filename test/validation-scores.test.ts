/**
 * Translation validation logs chrF and chrF++ beside BLEU: metrics.jsonl holds them per epoch, computed
 * on the same greedy output as the BLEU the schedule follows.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { cachedToyRun } from './helpers/toy-fixtures.ts';

test('metrics.jsonl: an epoch has valBleu and valScores (cased and lower-cased BLEU, chrF2, chrF2++) on sacreBLEU’s 0..100 scale', async () => {
  // Trained once per content hash of the code that trains it (cached-fixture.ts).
  const { runDir } = await cachedToyRun({
    corpus: { seed: 3, train: 120, val: 8, test: 8 },
    config: { epochs: 1 },
  });
  const lines = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { valBleu: number; valScores?: Record<string, number> });
  assert.equal(lines.length, 1);
  for (const line of lines) {
    // cased BLEU (the headline) and lower-cased BLEU beside chrF; a word run's schedule follows the lower-cased one
    assert.deepEqual(Object.keys(line.valScores ?? {}), ['BLEU cased', 'BLEU lc', 'chrF2', 'chrF2++']);
    assert.equal(line.valBleu, line.valScores!['BLEU lc']);
    for (const value of Object.values(line.valScores!)) assert.ok(value >= 0 && value <= 100, `${value}`);
  }
});
