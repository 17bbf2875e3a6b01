/**
 * The page's sentence to translate follows the loaded model's source language (clients/web/src/sample-sentences.ts),
 * and never replaces what the user typed. test/browser-import.test.ts sees it in the page.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sampleFor } from '../clients/web/src/sample-sentences.ts';

test("a sample in the model's source language replaces the default or an empty box", () => {
  assert.equal(sampleFor('de', 'A man runs.'), 'Ein Mann läuft.');
  assert.equal(sampleFor('fr', ''), 'Un homme court.');
  assert.equal(sampleFor('CS', '  '), 'Muž běží.');
  // Another model loaded after a German one: the German sample is a sample too.
  assert.equal(sampleFor('en', 'Ein Mann läuft.'), 'A man runs.');
});

test('what the user typed stays, and a language without a sample leaves the box alone', () => {
  assert.equal(sampleFor('de', 'Zwei Hunde spielen im Schnee.'), 'Zwei Hunde spielen im Schnee.');
  assert.equal(sampleFor('ja', 'A man runs.'), 'A man runs.');
  assert.equal(sampleFor(undefined, 'A man runs.'), 'A man runs.');
});
