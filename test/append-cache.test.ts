import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appendPosition, CACHE_CHUNK } from '../core/runtime/append-cache.ts';
import { ort } from '../core/runtime/ort-node.ts';
import type { HostTensor } from '../core/runtime/row-state.ts';

const tensor = (data: number[], dims: number[]) =>
  new ort.Tensor('float32', Float32Array.from(data), dims) as HostTensor;

/** Cache [rows 2, heads 1, capacity, dk 2] whose position p of row r holds (10r + p, -(10r + p)). */
function filled(capacity: number, length: number): HostTensor {
  const data = new Array<number>(2 * capacity * 2).fill(0);
  for (let r = 0; r < 2; r++)
    for (let p = 0; p < length; p++)
      [data[(r * capacity + p) * 2], data[(r * capacity + p) * 2 + 1]] = [10 * r + p, -(10 * r + p)];
  return tensor(data, [2, 1, capacity, 2]);
}

const newPosition = (p: number) => tensor([p, -p, 10 + p, -(10 + p)], [2, 1, 1, 2]);

test('appendPosition writes the new position in place when there is room, into a copy otherwise', () => {
  const cache = filled(4, 2);
  const inPlace = appendPosition(ort, cache, 2, newPosition(2), 2, true);
  assert.equal(inPlace.data, cache.data);
  assert.deepEqual(inPlace.dims, [2, 1, 4, 2]);
  assert.deepEqual(inPlace.data, filled(4, 3).data);

  const before = Float32Array.from(filled(4, 2).data as Float32Array);
  const shared = filled(4, 2);
  const copied = appendPosition(ort, shared, 2, newPosition(2), 2, false);
  assert.notEqual(copied.data, shared.data);
  assert.deepEqual(shared.data, before, 'the cache another state reads is left as it was');
  assert.deepEqual(copied.data, filled(4, 3).data);
});

test('a full cache grows by one chunk, keeping every row’s filled positions', () => {
  const grown = appendPosition(ort, filled(3, 3), 3, newPosition(3), 2, true);
  assert.deepEqual(grown.dims, [2, 1, 3 + CACHE_CHUNK, 2]);
  assert.deepEqual(grown.data, filled(3 + CACHE_CHUNK, 4).data);
  // From the encoder's empty caches.
  assert.deepEqual(appendPosition(ort, filled(0, 0), 0, newPosition(0), 2, true).data, filled(CACHE_CHUNK, 1).data);
  assert.throws(() => appendPosition(ort, filled(3, 3), 3, tensor([1, 2], [1, 1, 1, 2]), 2, true), RangeError);
});
