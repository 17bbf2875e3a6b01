/**
 * `frost experiment --jobs`: a grid trained a few runs at a time, queued in order, for budgets of work only.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { trainGrid } from '../experiments/grid.ts';
import { settleAtMost } from '../experiments/side-by-side.ts';

const dirs: string[] = [];
after(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

test('settleAtMost runs the tasks in order, at most `limit` at once, and settles every one', async () => {
  let running = 0;
  let most = 0;
  const started: number[] = [];
  const task = (i: number) => async () => {
    started.push(i);
    running++;
    most = Math.max(most, running);
    // Later tasks finish sooner, so a lane that frees up must take the next task in order, not a later one.
    await new Promise((r) => setTimeout(r, 20 - 3 * i));
    running--;
    if (i === 2) throw new Error('run 2 failed');
    return i * 10;
  };
  const results = await settleAtMost([0, 1, 2, 3, 4].map(task), 2);
  assert.equal(most, 2);
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
  assert.deepEqual(
    results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
    [0, 10, 'run 2 failed', 30, 40],
  );
  const all = await settleAtMost([0, 1, 2].map(task), 10);
  assert.equal(all.length, 3);
  assert.deepEqual(await settleAtMost([], 2), []);
});

test('a grid with a time budget refuses --jobs below its run count before it trains anything', async () => {
  const out = await mkdtemp(join(tmpdir(), 'frost-jobs-'));
  dirs.push(out);
  const spec = {
    out,
    dataDir: join(out, 'no-data'),
    arch: 'rnn-attn',
    preset: 'tiny',
    seed: 1,
    pairs: [{ src: 'de', tgt: 'en' }],
    heads: ['learned', 'fixed-l2'],
    log: () => undefined,
  };
  await assert.rejects(trainGrid({ ...spec, budgetMinutes: 5, jobs: 1 }), /a time budget needs its runs side by side/);
  await assert.rejects(trainGrid({ ...spec, maxUpdates: 5, jobs: 0 }), /jobs must be a positive integer, got 0/);
  assert.deepEqual(await readdir(out), [], 'nothing was started');
});
