/**
 * A request whose input fails its batch fails alone: the batcher (serve/batcher.ts) splits a failed batch and
 * decodes the halves again, so that its batch-mates are answered as if it had never been there, inputs already
 * done are not decoded twice, and a failure that is not one request's (every input fails) still reaches every
 * request. A stand-in batch kind decodes here: it upper-cases its inputs and fails any batch holding 'poison'.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Batcher, type BatchKind } from '../serve/batcher.ts';

interface Recorded {
  /** The inputs of every decode, in order. */
  decodes: string[][];
  /** Batch sizes the observer was told of: [inputs, requests]. */
  batches: [number, number][];
}

/**
 * A batcher over the stand-in kind whose first batch waits for `release()`, so that every request submitted
 * meanwhile gathers into the second batch. A batch holding 'poison' fails at 'poison' or at input `failAfter`,
 * whichever comes first (the inputs before it done); `failEverything` fails every batch so.
 */
function gatedBatcher(opts: { failAfter?: number; failEverything?: boolean } = {}) {
  const recorded: Recorded = { decodes: [], batches: [] };
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const kind: BatchKind<string, string, object, null> = {
    task: 'translation',
    key: () => '',
    tokens: () => 1,
    async decode(_runtime, inputs, _options, hooks) {
      recorded.decodes.push([...inputs]);
      if (inputs.includes('blocker')) await gate;
      const poisoned = opts.failEverything || inputs.includes('poison');
      for (const [b, input] of inputs.entries()) {
        if (input === 'poison' || (poisoned && b >= (opts.failAfter ?? 0)))
          throw new Error(`cannot decode ${JSON.stringify(input)}`);
        hooks.onDone(b, input.toUpperCase());
      }
    },
  };
  const batcher = new Batcher(
    kind,
    () => null,
    { maxBatch: 64, maxWaitMs: 1_000, maxQueue: 256, concurrency: 1 },
    { batch: (inputs, requests) => recorded.batches.push([inputs, requests]) },
  );
  return { batcher, recorded, release };
}

const settled = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (err: Error) => ({ ok: false as const, message: err.message }),
  );

describe('a batch that fails', () => {
  test('fails only the request whose input failed; its 13 batch-mates get their answers', async () => {
    const { batcher, recorded, release } = gatedBatcher();
    const blocker = batcher.submit(['blocker'], {});
    const texts = Array.from({ length: 14 }, (_, i) => (i === 9 ? 'poison' : `text ${i}`));
    const answers = texts.map((t) => settled(batcher.submit([t], {})));
    release();
    await blocker;
    const results = await Promise.all(answers);
    for (const [i, r] of results.entries()) {
      if (i === 9) assert.deepEqual(r, { ok: false, message: 'cannot decode "poison"' });
      else assert.deepEqual(r, { ok: true, value: [texts[i]!.toUpperCase()] });
    }
    assert.deepEqual(recorded.decodes[1], texts, 'the 14 were one batch');
    // 14 → 7 + 7 → the poisoned 7 as 4 + 3 → 2 + 2 → 1 + 1: the 14, then 2 + 2 + 2 + 2 decodes.
    assert.equal(recorded.decodes.length, 1 + 9);
    assert.deepEqual(recorded.decodes.at(-2), ['text 10']);
    assert.deepEqual(recorded.batches.slice(0, 4), [
      [1, 1],
      [14, 14],
      [7, 7],
      [7, 7],
    ]);
  });

  test('a request of several inputs fails whole when one of its inputs fails, and only it', async () => {
    const { batcher, release } = gatedBatcher({ failAfter: 1 });
    const blocker = batcher.submit(['blocker'], {});
    const mixed = settled(batcher.submit(['fine', 'poison', 'also fine'], {}));
    const other = settled(batcher.submit(['other', 'texts'], {}));
    release();
    await blocker;
    assert.deepEqual(await mixed, { ok: false, message: 'cannot decode "poison"' });
    assert.deepEqual(await other, { ok: true, value: ['OTHER', 'TEXTS'] });
  });

  test('inputs done before the batch failed keep their results and are not decoded again', async () => {
    const { batcher, recorded, release } = gatedBatcher({ failAfter: 2 });
    const blocker = batcher.submit(['blocker'], {});
    const first = settled(batcher.submit(['a', 'b', 'c'], {}));
    const poisoned = settled(batcher.submit(['poison'], {}));
    release();
    await blocker;
    // 'a' and 'b' were done when the batch failed at 'c': the retry decodes 'c' alone.
    assert.deepEqual(await first, { ok: true, value: ['A', 'B', 'C'] });
    assert.equal((await poisoned).ok, false);
    assert.deepEqual(recorded.decodes.slice(1), [['a', 'b', 'c', 'poison'], ['c'], ['poison']]);
  });

  test('a failure of every input still reaches every request, each with the error', async () => {
    const { batcher, recorded, release } = gatedBatcher({ failEverything: true });
    const blocker = settled(batcher.submit(['blocker'], {}));
    const answers = ['x', 'y', 'z'].map((t) => settled(batcher.submit([t], {})));
    release();
    await blocker;
    for (const [i, r] of (await Promise.all(answers)).entries())
      assert.deepEqual(r, { ok: false, message: `cannot decode ${JSON.stringify('xyz'[i])}` });
    // [x y z] → [x y] + [z] → [x] + [y]: bounded by twice the requests.
    assert.equal(recorded.decodes.length - 1, 5);
    await batcher.idle();
  });
});
