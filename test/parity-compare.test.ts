/**
 * How the export's parity check compares one decoder step (export/parity.ts `compareStep`): the two sides'
 * distributions after renormalising each, the exported graph's own normalisation held to the bar on its own,
 * and only the rows a decoder reaches.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareStep, type ParityReport } from '../export/parity.ts';

const V = 5;
const logSoftmax = (z: number[]) => {
  const m = Math.max(...z);
  const lse = m + Math.log(z.reduce((s, x) => s + Math.exp(x - m), 0));
  return z.map((x) => x - lse);
};
const rows = (...r: number[][]) => Float32Array.from(r.flat());
const fresh = (): ParityReport => ({ sentences: 2, steps: 1, maxAbsDiff: 0, maxScaledDiff: 0, worst: null });
const all = () => true;

test('a shift of a whole tfjs row (its normaliser off by 1e-4) is no difference between the distributions', () => {
  const lp = logSoftmax([3, 1, 0.5, -2, 0]);
  const report = fresh();
  compareStep(report, 0, rows(lp.map((x) => x + 1e-4)), rows(lp), V, all);
  assert.ok(report.maxScaledDiff < 1e-6, `${report.maxScaledDiff}`);
  assert.ok(report.maxNormError! < 1e-6);
});

test('a graph that returns logits instead of log-probabilities fails on its normalisation', () => {
  const z = [3, 1, 0.5, -2, 0];
  const report = fresh();
  compareStep(report, 0, rows(logSoftmax(z)), rows(z), V, all);
  assert.ok(report.maxScaledDiff < 1e-6, 'the same distribution once renormalised');
  assert.ok(report.maxNormError! > 3, `log Σ exp(z) = ${report.maxNormError}`);
});

test('a changed logit is a difference, reported where it is; unreached rows and NaN', () => {
  const lp = logSoftmax([3, 1, 0.5, -2, 0]);
  const changed = logSoftmax([3, 1, 0.5, -1.99, 0]);
  const report = fresh();
  compareStep(report, 4, rows(lp, lp), rows(lp, changed), V, all);
  assert.ok(report.maxScaledDiff > 1e-3, `${report.maxScaledDiff}`);
  assert.deepEqual([report.worst?.step, report.worst?.row, report.worst?.token], [4, 1, 3]);
  const skipped = fresh();
  compareStep(skipped, 4, rows(lp, lp), rows(lp, changed), V, (row) => row === 0);
  assert.equal(skipped.maxScaledDiff, 0, 'row 1 is past its target: not compared');
  const nan = fresh();
  compareStep(nan, 0, rows(lp), rows(lp.map((x, i) => (i === 2 ? NaN : x))), V, all);
  assert.equal(nan.maxScaledDiff, Infinity);
  assert.equal(nan.maxNormError, Infinity);
});

test('an excluded target, pinned far below every real log-probability on both sides, is not compared', () => {
  // tfjs pins the logit at −10⁴; the graph adds −10⁴ to it (models/heads/output-mask.ts).
  const tfjs = logSoftmax([3, 1, 0.5, -1e4, 0]);
  const graph = logSoftmax([3, 1, 0.5, -1e4 + 7.25, 0]);
  const report = fresh();
  compareStep(report, 0, rows(tfjs), rows(graph), V, all);
  assert.ok(report.maxScaledDiff < 1e-6, `${report.maxScaledDiff}`);
  assert.equal(report.maxAbsDiff < 1e-5, true);
  // Pinned on one side only is a difference like any other.
  const unpinned = fresh();
  compareStep(unpinned, 0, rows(tfjs), rows(logSoftmax([3, 1, 0.5, -2, 0])), V, all);
  assert.ok(unpinned.maxScaledDiff > 0.5, `${unpinned.maxScaledDiff}`);
});
