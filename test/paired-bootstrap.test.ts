/**
 * Paired bootstrap resampling (core/metrics/paired-bootstrap.ts), as sacreBLEU's `--paired-bs`: cases whose interval
 * can be worked out by hand, determinism under a seed, and the whole test set's statistic equal to the corpus metric.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bleuFromStats, bleuSegmentStats, corpusBleu } from '../core/metrics/bleu.ts';
import { captionBleuStats, evaluateCaptions } from '../core/metrics/caption-eval.ts';
import { cocoBleuFromStats } from '../core/metrics/coco-bleu.ts';
import {
  bleuScore,
  pairedBleuBootstrap,
  pairedBootstrap,
  PAIRED_BOOTSTRAP_DEFAULTS,
  type SegmentStats,
} from '../core/metrics/paired-bootstrap.ts';
import { SeededRandom } from '../core/random.ts';

const WORDS = 'a man woman dog ball red blue runs jumps on in the park street with small big girl boy water'.split(' ');

/** `n` sentences of 6–15 words, drawn from `seed`. */
function sentences(n: number, seed: number): string[] {
  const rng = new SeededRandom(seed, 'sentences');
  return Array.from({ length: n }, () =>
    Array.from({ length: 6 + rng.int(10) }, () => WORDS[rng.int(WORDS.length)]!).join(' '),
  );
}

/** Each sentence with its `k`-th, (2k)-th, ... words replaced by 'x'. */
const damage = (lines: string[], k: number) =>
  lines.map((s) =>
    s
      .split(' ')
      .map((w, i) => (i % k === k - 1 ? 'x' : w))
      .join(' '),
  );

const rowsOf = (values: number[][]): SegmentStats => ({
  width: values[0]!.length,
  count: values.length,
  rows: Float64Array.from(values.flat()),
});

describe('paired bootstrap', () => {
  const refs = sentences(300, 1);

  test('identical systems: a difference of 0, its interval [0, 0], and sacreBLEU’s smallest p', () => {
    const hyps = damage(refs, 4);
    const r = pairedBleuBootstrap(hyps, hyps, [refs]);
    assert.equal(r.delta, 0);
    assert.equal(r.lo, 0);
    assert.equal(r.hi, 0);
    assert.deepEqual(r.system, r.baseline);
    // sacreBLEU counts resampled |differences| (shifted to mean 0) strictly above the real one: none, so 1/(n+1).
    assert.equal(r.p, 1 / (PAIRED_BOOTSTRAP_DEFAULTS.resamples + 1));
    assert.equal(r.resamples, 1000);
    assert.equal(r.seed, 12345);
    assert.equal(r.segments, 300);
  });

  test('a system better on every sentence: the whole interval above 0', () => {
    const better = damage(refs, 5);
    const worse = damage(refs, 3);
    const r = pairedBleuBootstrap(better, worse, [refs]);
    assert.ok(r.lo > 0, `interval [${r.lo}, ${r.hi}]`);
    assert.ok(r.lo <= r.delta && r.delta <= r.hi);
    assert.ok(r.p < 0.05, `p ${r.p}`);
    // and the other way round, entirely below 0, mirrored on the same resamples
    const back = pairedBleuBootstrap(worse, better, [refs]);
    assert.equal(back.delta, -r.delta);
    assert.equal(back.hi, -r.lo);
    assert.equal(back.lo, -r.hi);
    // each system's own interval holds its whole-set score
    for (const s of [r.system, r.baseline]) assert.ok(s.lo <= s.score && s.score <= s.hi, JSON.stringify(s));
  });

  test('by hand: two segments give three distinct resamples, and the interval spans their extremes', () => {
    // Score = the summed value. Resamples {1,1}: 6 − 2 = 4; {1,2}: 4 − 2 = 2; {2,2}: 2 − 2 = 0. Each extreme
    // comes up about a quarter of the time, far more than the 2.5% each end of the interval leaves out.
    const r = pairedBootstrap(rowsOf([[3], [1]]), rowsOf([[1], [1]]), (sums) => sums[0]!);
    assert.equal(r.delta, 2);
    assert.equal(r.lo, 0);
    assert.equal(r.hi, 4);
    assert.equal(r.system.lo, 2);
    assert.equal(r.system.hi, 6);
    assert.ok(Math.abs(r.system.mean - 4) < 0.15, `mean of 1,000 resamples ${r.system.mean}`);
    // One segment: every resample is the test set itself.
    const one = pairedBootstrap(rowsOf([[3]]), rowsOf([[1]]), (sums) => sums[0]!);
    assert.deepEqual([one.lo, one.delta, one.hi], [2, 2, 2]);
  });

  test('seeded: the same seed gives the same interval, another seed another', () => {
    const a = damage(refs, 5);
    const b = damage(refs, 6);
    const first = pairedBleuBootstrap(a, b, [refs], { seed: 7 });
    assert.deepEqual(pairedBleuBootstrap(a, b, [refs], { seed: 7 }), first);
    const other = pairedBleuBootstrap(a, b, [refs], { seed: 8 });
    assert.equal(other.delta, first.delta, 'the whole test set does not depend on the seed');
    assert.notDeepEqual([other.lo, other.hi], [first.lo, first.hi]);
    assert.equal(pairedBleuBootstrap(a, b, [refs], { resamples: 200 }).resamples, 200);
  });

  test("the whole test set's statistic is corpus BLEU, cased and lower-cased, with several references", () => {
    const hyps = damage(refs, 4).map((s, i) => (i % 3 === 0 ? s.toUpperCase() : s));
    const base = damage(refs, 3);
    const second = sentences(300, 2).map((s, i) => (i % 2 === 0 ? s : null));
    for (const options of [{}, { lowercase: true }]) {
      const r = pairedBleuBootstrap(hyps, base, [refs, second], options);
      assert.equal(r.system.score, corpusBleu(hyps, [refs, second], options).score);
      assert.equal(r.baseline.score, corpusBleu(base, [refs, second], options).score);
      assert.equal(r.delta, r.system.score - r.baseline.score);
    }
    // The segment statistics summed are corpus BLEU's, every field of it.
    const stats = bleuSegmentStats(hyps, [refs]);
    const sums = new Float64Array(stats.width);
    stats.rows.forEach((v, i) => (sums[i % stats.width]! += v));
    const whole = bleuFromStats(sums);
    const corpus = corpusBleu(hyps, [refs]);
    assert.equal(whole.format(), corpus.format());
    assert.deepEqual(whole.counts, corpus.counts);
    assert.equal(bleuScore()(sums), corpus.score);
  });

  test("coco-caption's BLEU-4 from summed per-image statistics is evaluateCaptions' BLEU-4", () => {
    const captions = sentences(40, 3);
    const references = captions.map((_, i) => [refs[i]!, refs[i + 40]!, refs[i + 80]!]);
    const stats = captionBleuStats(captions, references);
    const sums = new Float64Array(stats.width);
    stats.rows.forEach((v, i) => (sums[i % stats.width]! += v));
    assert.equal(cocoBleuFromStats(sums).bleu[3], evaluateCaptions(captions, references).bleu4);
  });

  test('refuses systems of other test sets, an empty one and no resamples', () => {
    const two = rowsOf([[1], [2]]);
    assert.throws(() => pairedBootstrap(two, rowsOf([[1]]), (s) => s[0]!), /same segments: 2 × 1 against 1 × 1/);
    assert.throws(() => pairedBootstrap(two, two, (s) => s[0]!, { resamples: 0 }), /'resamples' must be a positive/);
    const empty = { width: 1, count: 0, rows: new Float64Array(0) };
    assert.throws(() => pairedBootstrap(empty, empty, (s) => s[0]!), /at least one segment/);
    assert.throws(() => pairedBleuBootstrap(['a'], ['a', 'b'], [['a']]), /reference stream 1 has 1 lines/);
  });
});
