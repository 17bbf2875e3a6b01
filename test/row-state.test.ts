import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ort } from '../core/runtime/ort-node.ts';
import { SeededRandom } from '../core/random.ts';
import { gatherRows, reorderRowsInPlace, type HostTensor } from '../core/runtime/row-state.ts';

function tensor(rows: number, cols: number): HostTensor {
  const data = Float32Array.from({ length: rows * cols }, (_, i) => i);
  return new ort.Tensor('float32', data, [rows, cols]) as HostTensor;
}

test('reorderRowsInPlace gives what gatherRows gives, for beam moves, cycles, duplicates and dropped rows', () => {
  const rng = new SeededRandom(7, 'row-state-test');
  const orders: Int32Array[] = [
    Int32Array.from([0, 0, 1, 0, 2]), // beams following the top ones
    Int32Array.from([1, 2, 0]), // a cycle: every row read after its slot is written
    Int32Array.from([4, 3, 2, 1, 0]), // reversal
    Int32Array.from([0, 1, 2]), // the first rows, others dropped
    Int32Array.from([3, 4, 4]), // dropped rows read by kept ones
    Int32Array.from([2, 2, 2, 2, 2]),
  ];
  for (let k = 0; k < 40; k++) {
    const n = 1 + Math.floor(rng.next() * 8);
    orders.push(Int32Array.from({ length: n }, () => Math.floor(rng.next() * 8)));
  }
  for (const order of orders) {
    const expected = gatherRows(ort, tensor(8, 3), order);
    const source = tensor(8, 3);
    const got = reorderRowsInPlace(ort, source, order);
    assert.deepEqual(got.dims, expected.dims, `order ${order.join(',')}`);
    assert.deepEqual(
      Array.from(got.data as Float32Array),
      Array.from(expected.data as Float32Array),
      `order ${order.join(',')}`,
    );
    assert.equal((got.data as Float32Array).buffer, (source.data as Float32Array).buffer, 'no new buffer');
  }
  assert.throws(() => reorderRowsInPlace(ort, tensor(2, 3), Int32Array.from([0, 1, 1])), RangeError);
});
