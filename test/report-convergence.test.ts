/**
 * Convergence from the validation curve (report/convergence.ts): the per-epoch validation BLEU read from a
 * run's metrics.jsonl, the gain of its last 5 epochs, and when a run stopped by a cap or budget counts as
 * converged for the verdicts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PAPER_CLAIM } from '../experiments/claims/claim.ts';
import {
  CONVERGENCE_WINDOW,
  convergenceOf,
  isConverged,
  lastGain,
  validationCurve,
  type ValBleuPoint,
} from '../report/convergence.ts';
import { readMetrics } from '../report/run-status.ts';
import type { RunReport } from '../report/schema.ts';

const curve = (bleus: number[]): ValBleuPoint[] =>
  bleus.map((bleu, i) => ({ epoch: i + 1, step: 100 * (i + 1), bleu }));

/** A metrics.jsonl line as the translation trainer writes it (train/trainer.ts). */
const line = (epoch: number, step: number, valBleu: number | null, complete = true) =>
  JSON.stringify({
    time: '2026-11-25T00:00:00.000Z',
    epoch,
    step,
    trainLoss: 3,
    valBleu,
    valScores: { 'BLEU lc': valBleu },
    learningRate: 0.001,
    tokensPerSecond: 2000,
    elapsedMinutes: epoch * 3.5,
    best: true,
    complete,
  });

describe('the validation curve from metrics.jsonl', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'frost-convergence-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('one point per epoch; a partial epoch completed later keeps its last validation; lines past the checkpoint go', async () => {
    await writeFile(
      join(dir, 'metrics.jsonl'),
      [
        line(1, 454, 10.9),
        line(2, 908, 17.64),
        // stopped by a budget mid-epoch 3, then resumed with a larger one: epoch 3 is validated again, whole
        line(3, 1100, 19.5, false),
        line(3, 1362, 23.38),
        // a validation JSON wrote as null (NaN): not a point
        line(4, 1816, null),
        line(5, 2270, 24.1),
        // written after the last checkpoint (killed before its save): work the run no longer holds
        line(6, 2724, 99),
      ].join('\n') + '\n',
    );
    const points = validationCurve(await readMetrics(dir), 2270);
    assert.deepEqual(points, [
      { epoch: 1, step: 454, bleu: 10.9 },
      { epoch: 2, step: 908, bleu: 17.64 },
      { epoch: 3, step: 1362, bleu: 23.38 },
      { epoch: 5, step: 2270, bleu: 24.1 },
    ]);
    assert.equal(
      validationCurve(await readMetrics(dir)).at(-1)!.bleu,
      99,
      'without a checkpoint step every line counts',
    );
  });

  test('lines without a validation BLEU (other tasks, other events) are skipped', () => {
    assert.deepEqual(
      validationCurve([
        { epoch: 1, step: 10 },
        { epoch: 1, step: 10, valBleu: '12' },
        { epoch: 2, step: 20, valBleu: 12.5 },
      ]),
      [{ epoch: 2, step: 20, bleu: 12.5 }],
    );
  });
});

describe('the gain of the last epochs', () => {
  test(`best of the last ${CONVERGENCE_WINDOW} epochs minus the best before them`, () => {
    assert.equal(CONVERGENCE_WINDOW, 5);
    // best before: 30 (epoch 4); best of the last five: 31.12
    assert.ok(Math.abs(lastGain(curve([10, 20, 28, 30, 29.5, 29.9, 31.12, 30.4, 30]))! - 1.12) < 1e-9);
    // the last five never beat epoch 2: the gain is negative, not 0
    assert.ok(Math.abs(lastGain(curve([10, 30, 29, 29.5, 29.8, 29.2, 29.9]))! - -0.1) < 1e-9);
    // an earlier peak counts as "before", whatever came between
    assert.equal(lastGain(curve([31, 20, 21, 22, 23, 24])), 24 - 31);
  });

  test(`null with fewer than ${CONVERGENCE_WINDOW + 1} validated epochs`, () => {
    assert.equal(lastGain(curve([10, 20, 28, 30, 31])), null);
    assert.equal(lastGain(curve([])), null);
    assert.equal(lastGain(curve([10, 20, 28, 30, 31, 31.2])), 31.2 - 10);
    assert.equal(lastGain(curve([10, 20, 30]), 2), 20);
  });
});

describe('converged for the verdicts', () => {
  const training = (over: Partial<RunReport['training']>): RunReport['training'] => ({
    epochs: 20,
    steps: 9080,
    minutes: 70,
    budgetMinutes: null,
    bestValBleu: 30,
    stopReason: 'reached 20 epochs',
    stopKind: 'epochs',
    ...over,
  });
  const margin = PAPER_CLAIM.maxBleuLoss;

  test("the stopping rule, or a cap or budget with a gain under the claim's margin", () => {
    assert.equal(margin, 0.5);
    assert.equal(convergenceOf(training({ stopKind: 'plateau' })), 'stopping rule');
    assert.equal(convergenceOf(training({ stopKind: 'plateau', lastGain: 3 })), 'stopping rule');
    for (const stopKind of ['epochs', 'updates', 'time'] as const) {
      assert.equal(convergenceOf(training({ stopKind, lastGain: margin - 0.01 })), 'flat', stopKind);
      assert.equal(convergenceOf(training({ stopKind, lastGain: -0.3 })), 'flat', stopKind);
      assert.equal(
        convergenceOf(training({ stopKind, lastGain: margin })),
        'gaining',
        `${stopKind}: 0.5 is not under 0.5`,
      );
    }
    assert.ok(isConverged({ training: training({ lastGain: 0.2 }) }));
    assert.ok(!isConverged({ training: training({ lastGain: 1.12 }) }));
  });

  test('no curve long enough, or no recorded budget stop: not converged (reports from before curves were kept)', () => {
    assert.equal(convergenceOf(training({})), 'unknown', 'no lastGain at all');
    assert.equal(convergenceOf(training({ lastGain: null })), 'unknown', 'fewer than 6 epochs');
    assert.equal(convergenceOf(training({ stopKind: null, lastGain: 0.1 })), 'unknown', 'unfinished');
    assert.equal(convergenceOf(training({ stopKind: undefined, lastGain: 0.1 })), 'unknown', 'stop kind unrecorded');
    assert.ok(!isConverged({ training: training({ lastGain: null }) }));
  });
});
