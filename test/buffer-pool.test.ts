import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appendPosition, CACHE_CHUNK } from '../core/runtime/append-cache.ts';
import { BufferPool } from '../core/runtime/buffer-pool.ts';
import { ort } from '../core/runtime/ort-node.ts';
import { gatherRows, type HostTensor } from '../core/runtime/row-state.ts';

const tensor = (data: ArrayLike<number>, dims: number[]) =>
  new ort.Tensor('float32', Float32Array.from(data), dims) as HostTensor;

test('a kept buffer is handed out again zero-filled, or as it was when the caller overwrites it', () => {
  const pool = new BufferPool();
  const a = new Float32Array([1, 2, 3, 4]);
  pool.give(a);
  assert.equal(pool.keptBytes, 16);
  assert.equal(pool.take(3).length, 3, 'another length is a new buffer');
  const again = pool.take(4);
  assert.equal(again, a);
  assert.deepEqual([...again], [0, 0, 0, 0]);
  assert.equal(pool.keptBytes, 0);
  a.set([5, 6, 7, 8]);
  pool.give(a);
  assert.deepEqual([...pool.take(4, true)], [5, 6, 7, 8]);
  assert.notEqual(pool.take(4), a, 'a buffer is handed out once');
});

test('the pool refuses views into a larger buffer, empty buffers, and buffers past its byte bound', () => {
  const pool = new BufferPool(32);
  const whole = new Float32Array(8);
  pool.give(whole.subarray(0, 4));
  pool.give(whole.subarray(4));
  pool.give(new Float32Array(0));
  assert.equal(pool.keptBytes, 0);
  pool.give(whole);
  pool.give(new Float32Array(8));
  assert.equal(pool.keptBytes, 32, 'the second buffer would pass the 32-byte bound');
});

test('a cache that grows in place hands its old buffer to the pool, and the next growth of that size reuses it', () => {
  const pool = new BufferPool();
  const row = (capacity: number, length: number) => {
    const data = new Float32Array(capacity);
    for (let p = 0; p < length; p++) data[p] = p + 1;
    return tensor(data, [1, 1, capacity, 1]);
  };
  const full = row(CACHE_CHUNK, CACHE_CHUNK);
  const old = full.data as Float32Array;
  const grown = appendPosition(ort, full, CACHE_CHUNK, tensor([99], [1, 1, 1, 1]), 2, true, pool);
  assert.equal(pool.keptBytes, old.byteLength);
  assert.deepEqual([...(grown.data as Float32Array)].slice(0, CACHE_CHUNK + 2), [1, 2, 3, 4, 5, 6, 7, 8, 99, 0]);

  // A cache another state still reads is copied, and its buffer is not pooled.
  const shared = row(CACHE_CHUNK, CACHE_CHUNK);
  appendPosition(ort, shared, CACHE_CHUNK, tensor([7], [1, 1, 1, 1]), 2, false, pool);
  assert.deepEqual([...(shared.data as Float32Array)], [1, 2, 3, 4, 5, 6, 7, 8]);

  // The next cache that starts from empty takes the kept buffer, zero-filled, as a fresh one would be.
  old.fill(42);
  const first = appendPosition(ort, row(0, 0), 0, tensor([5], [1, 1, 1, 1]), 2, true, pool);
  assert.equal(first.data, old);
  assert.deepEqual([...(first.data as Float32Array)], [5, 0, 0, 0, 0, 0, 0, 0]);
  assert.equal(pool.keptBytes, 0);
});

test('gatherRows from the pool gives what it gives without one', () => {
  const pool = new BufferPool();
  pool.give(new Float32Array(6).fill(-1));
  const t = tensor([1, 2, 3, 4, 5, 6], [3, 2]);
  const order = Int32Array.from([2, 2, 0]);
  const pooled = gatherRows(ort, t, order, pool);
  assert.deepEqual(pooled.data, gatherRows(ort, t, order).data);
  assert.equal(pool.keptBytes, 0, 'the kept buffer was used');
  // Other types never come from the float32 pool.
  const ids = new ort.Tensor('int64', BigInt64Array.from([1n, 2n]), [2]) as HostTensor;
  assert.deepEqual(gatherRows(ort, ids, Int32Array.from([1, 0]), pool).data, BigInt64Array.from([2n, 1n]));
});
