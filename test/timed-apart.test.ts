/**
 * Rows a grid reuses from an earlier session keep that session's timings: a report says when each row was timed
 * once they were not all timed together (report/timed-apart.ts), in mt-heads' latency table (report-render.test.ts)
 * and in caption-heads' results.md (here).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CaptionRow, formatResults } from '../experiments/caption-results.ts';
import { formatTimedAt, timedApart } from '../report/timed-apart.ts';

test('timings more than two hours apart, or some unrecorded, were not taken together', () => {
  assert.equal(timedApart(['2026-11-25T23:45:41Z', '2026-11-26T01:45:41Z']), false);
  assert.equal(timedApart(['2026-11-25T23:45:41Z', '2026-11-26T01:45:42Z']), true);
  assert.equal(timedApart([undefined, undefined]), false, 'older frost recorded none: nothing to tell apart');
  assert.equal(timedApart(['2026-11-25T23:45:41Z', undefined]), true);
  assert.equal(timedApart([]), false);
  assert.equal(formatTimedAt('2026-11-25T23:45:41.070Z'), '2026-11-25 23:45');
  assert.equal(formatTimedAt(undefined), '–');
});

const row = (head: string, decodeSeconds: number, decodedAt?: string): CaptionRow => ({
  arch: 'show-tell',
  head,
  learnable: 1000,
  frozen: 0,
  epochs: '10 (reached 10 epochs)',
  steps: 5000,
  trainMinutes: 100,
  scores: {
    ...{ bleu1: 0.6, bleu2: 0.4, bleu3: 0.3, bleu4: 0.2, rougeL: 0.45, ciderD: 0.4 },
    vocab: { distinctWords: 300, totalWords: 9000 },
    count: 1000,
  },
  decodeSeconds,
  ...(decodedAt === undefined ? {} : { decodedAt }),
});

function results(rows: CaptionRow[]): string {
  const shared = { examples: [], machine: 'Test CPU x2', budget: 'at most 10 epochs', beam: 10, preset: 'small' };
  return formatResults({
    ...shared,
    rows,
    testImages: 1000,
    command: 'frost experiment caption-heads',
    wallMinutes: 1,
  });
}

test("caption-heads' results say when each row was decoded only when they were decoded apart", () => {
  const together = results([
    row('learned', 61.5, '2026-11-26T01:10:00Z'),
    row('fixed-uniform', 60.2, '2026-11-26T01:12:00Z'),
  ]);
  assert.match(together, /\| test decoding \(s\) \|\n/);
  assert.doesNotMatch(together, /decoded \(UTC\)|decoded together/);
  const apart = results([
    row('learned', 61.5, '2026-11-25T20:10:00Z'),
    row('fixed-uniform', 48.0, '2026-11-26T01:12:00Z'),
  ]);
  assert.match(
    apart,
    /\| test decoding \(s\) \| decoded \(UTC\) \|\n\|---\|---\|---:\|---:\|---:\|---:\|---:\|---\|\n/,
  );
  assert.match(apart, /\| `learned` \| .* \| 61\.5 \| 2026-11-25 20:10 \|\n/);
  assert.match(apart, /\| `fixed-uniform` \| .* \| 48\.0 \| 2026-11-26 01:12 \|\n/);
  assert.match(apart, /compare decoding times only among rows decoded together/);
});
