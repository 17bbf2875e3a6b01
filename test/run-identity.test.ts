/**
 * A grid resumes a run folder only when the run was started with the arguments the grid starts it with:
 * where its files are and how long it trains aside, since a moved folder or a larger budget is the same run.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { refuseOtherArguments } from '../experiments/run-identity.ts';

const GRID = ['--arch', 'rnn-attn', '--head', 'learned', '--data', '/data/multi30k', '--out', '/runs/g/de-en-learned'];

describe('refuseOtherArguments', () => {
  test('the same run moved, with another budget, or quieter, is the same run', () => {
    const started = ['--arch', 'rnn-attn', '--head', 'learned', '--data', 'data/m30k', '--out', 'old/de-en-learned'];
    assert.doesNotThrow(() => refuseOtherArguments('/runs/g/de-en-learned', started, GRID));
    const budgeted = [...started, '--epochs', '20', '--max-updates', '900', '--max-minutes', '60', '--quiet'];
    assert.doesNotThrow(() => refuseOtherArguments('/runs/g/de-en-learned', budgeted, [...GRID, '--epochs', '30']));
    const cached = [...started, '--image-cache', '/a'];
    assert.doesNotThrow(() => refuseOtherArguments('/runs/g/de-en-learned', cached, [...GRID, '--image-cache', '/b']));
  });

  test('a run started before config.json recorded its arguments is not checked', () => {
    assert.doesNotThrow(() => refuseOtherArguments('/runs/g/de-en-learned', undefined, [...GRID, '--lr', '0.01']));
  });

  test('other training flags are another run, refused naming the folder and both command lines', () => {
    const started = [...GRID, '--val-sentences', '500'];
    assert.throws(
      () => refuseOtherArguments('/runs/g/de-en-learned', started, GRID),
      (err: Error) =>
        err.message.startsWith('/runs/g/de-en-learned was started with `frost train --arch rnn-attn') &&
        err.message.includes('--val-sentences 500`; this grid starts it with `frost train --arch rnn-attn') &&
        err.message.includes("give the grid the run's --train-flags"),
    );
    // Flags are compared in order, values included: the grid gives them in one order every time.
    assert.throws(() => refuseOtherArguments('/d', [...GRID, '--lr', '0.01'], [...GRID, '--lr', '0.02']), /0\.01/);
    assert.throws(() => refuseOtherArguments('/d', [...GRID, '--head', 'tied'], GRID), /was started with/);
  });
});
