import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ort } from '../core/runtime/ort-node.ts';
import { SeededRandom } from '../core/random.ts';
import {
  gatherRows,
  memoryGroups,
  MemoryStore,
  planRowMoves,
  reorderRowsInPlace,
  type HostTensor,
} from '../core/runtime/row-state.ts';

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

test("reorderRowsInPlace with a filled span moves each row's filled positions as gatherRows would, and only those", () => {
  // Rows of an append cache [rows 6, heads 2, capacity 5, dk 3] filled to 3 positions; long dk too, past SHORT_SPAN.
  for (const dk of [3, 200]) {
    const dims = [6, 2, 5, dk];
    const size = dims.reduce((a, b) => a * b, 1);
    const cache = () =>
      new ort.Tensor(
        'float32',
        Float32Array.from({ length: size }, (_, i) => i),
        dims,
      ) as HostTensor;
    const rng = new SeededRandom(5, 'row-state-filled');
    const orders = [Int32Array.from([0, 0, 1, 0, 2, 5]), Int32Array.from([5, 4, 3, 2, 1, 0]), Int32Array.from([1, 1])];
    for (let k = 0; k < 20; k++)
      orders.push(Int32Array.from({ length: 1 + Math.floor(rng.next() * 6) }, () => Math.floor(rng.next() * 6)));
    for (const order of orders) {
      const source = cache();
      const expected = gatherRows(ort, cache(), order).data as Float32Array;
      const got = reorderRowsInPlace(ort, source, order, { axis: 2, length: 3 }).data as Float32Array;
      const before = cache().data as Float32Array;
      const rowSize = size / 6;
      for (let i = 0; i < order.length; i++)
        for (let h = 0; h < 2; h++)
          for (let p = 0; p < 5; p++) {
            const at = i * rowSize + (h * 5 + p) * dk;
            // Filled positions come from the parent row; spare ones are not touched (the row's own old values).
            const want = p < 3 ? expected : before;
            assert.deepEqual(
              got.subarray(at, at + dk),
              want.subarray(at, at + dk),
              `order ${order.join(',')} row ${i}`,
            );
          }
    }
  }
  assert.throws(
    () => reorderRowsInPlace(ort, tensor(2, 3), Int32Array.from([1, 0]), { axis: 1, length: 4 }),
    RangeError,
  );
});

test('reorderRowsInPlace keeps an int64 state int64 (rows saved before they are overwritten too)', () => {
  const t = new ort.Tensor('int64', BigInt64Array.from([10n, 11n, 20n, 21n, 30n, 31n]), [3, 2]) as HostTensor;
  const got = reorderRowsInPlace(ort, t, Int32Array.from([1, 2, 0]));
  assert.ok(got.data instanceof BigInt64Array);
  assert.deepEqual(Array.from(got.data as BigInt64Array), [20n, 21n, 30n, 31n, 10n, 11n]);
});

test('memoryGroups finds equal groups of consecutive rows per encoder row, and refuses anything else', () => {
  const groups = (rows: number[]) => {
    const g = memoryGroups(Int32Array.from(rows));
    return g && Array.from(g);
  };
  assert.deepEqual(groups([0, 1, 2, 3]), [0, 1, 2, 3]); // greedy: groups of one
  assert.deepEqual(groups([0, 0, 0, 1, 1, 1]), [0, 1]); // beam 3
  assert.deepEqual(groups([2, 2, 0, 0]), [2, 0]); // finished inputs dropped, rows in any source order
  assert.deepEqual(groups([0, 0, 1, 1, 1, 1]), [0, 1, 1]); // by position: groups as long as the first run
  assert.equal(groups([0, 0, 1]), null); // unequal
  assert.equal(groups([0, 0, 1, 2]), null);
  assert.deepEqual(groups([0, 1, 1, 0]), [0, 1, 1, 0]); // groups of one: any order
});

test('a grouped MemoryStore gives one memory row per group, and per row when the rows are not in equal groups', () => {
  const base = { k: tensor(3, 2) };
  const store = new MemoryStore(ort, base, true);
  assert.equal(store.materialise(Int32Array.from([0, 1, 2])).k, base.k, 'identity: the encoder output itself');
  const beams = store.materialise(Int32Array.from([0, 0, 2, 2]));
  assert.deepEqual(beams.k!.dims, [2, 2]);
  assert.deepEqual(Array.from(beams.k!.data as Float32Array), [0, 1, 4, 5]);
  const uneven = store.materialise(Int32Array.from([0, 0, 2]));
  assert.deepEqual(uneven.k!.dims, [3, 2]);
  assert.deepEqual(Array.from(uneven.k!.data as Float32Array), [0, 1, 0, 1, 4, 5]);
  const perRow = new MemoryStore(ort, base).materialise(Int32Array.from([0, 0, 2, 2]));
  assert.deepEqual(perRow.k!.dims, [4, 2], 'ungrouped: one memory row per step row');
});

test('planRowMoves copies each moved row once and sets one row aside per cycle', () => {
  const pairs = (order: number[]) => Array.from(planRowMoves(Int32Array.from(order)));
  const count = (order: number[]) => pairs(order).length / 2;
  assert.deepEqual(pairs([0, 1, 2]), [], 'nothing moves');
  // Beams following the top ones: four rows move, no cycle, so four copies and nothing set aside.
  assert.equal(count([0, 0, 1, 0, 2]), 4);
  assert.ok(!pairs([0, 0, 1, 0, 2]).includes(-1));
  // A 3-cycle: set row 0 aside, two copies, put it back.
  assert.deepEqual(pairs([1, 2, 0]), [-1, 0, 0, 1, 1, 2, 2, -1]);
  // Two swaps: one row aside each.
  assert.equal(count([1, 0, 3, 2]), 6);
  // Dropped rows read by kept ones need no saving: their slots are never written.
  assert.deepEqual(pairs([3, 4, 4]), [2, 4, 1, 4, 0, 3]);
});
