/** serve/upload-budget.ts: the byte budget and the decode slots refuse with a 503 rather than queue without bound. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HttpError } from '../serve/errors.ts';
import { UploadBudget } from '../serve/upload-budget.ts';

const busy = (err: unknown) =>
  err instanceof HttpError && err.code === 'FROST_ERR_UPLOADS_BUSY' && err.statusCode === 503;

test('the byte budget refuses past its size and takes back what is released', () => {
  const budget = new UploadBudget({ maxBytes: 100 });
  const a = budget.reserveBytes(60);
  assert.throws(() => budget.reserveBytes(50), busy);
  a.release();
  a.release(); // twice is once
  assert.equal(budget.heldBytes, 0);
  // One upload larger than the whole budget is still let through when nothing else is held.
  budget.reserveBytes(500).release();
});

test('decode slots: at most decodeConcurrency at once, maxWaiting in line, then 503', async () => {
  const budget = new UploadBudget({ decodeConcurrency: 1, maxWaiting: 1 });
  let running = 0;
  let most = 0;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const work = async () => {
    running++;
    most = Math.max(most, running);
    await gate;
    running--;
    return 'done';
  };
  const first = budget.decode(work);
  const second = budget.decode(work);
  await assert.rejects(budget.decode(work), busy);
  open();
  assert.deepEqual(await Promise.all([first, second]), ['done', 'done']);
  assert.equal(most, 1);
});

test('a waiter whose client left gives up its place', async () => {
  const budget = new UploadBudget({ decodeConcurrency: 1, maxWaiting: 1 });
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const first = budget.decode(() => gate);
  const left = new AbortController();
  const waiting = budget.decode(async () => 'never', left.signal);
  left.abort(new Error('client left'));
  await assert.rejects(waiting, /client left/);
  // Its place is free again.
  const third = budget.decode(async () => 'third');
  open();
  await first;
  assert.equal(await third, 'third');
});
