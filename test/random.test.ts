import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fmix32, hashAt, l2NormaliseRows, SeededRandom, streamKey, uniformMatrix, unitAt } from '../core/random.ts';

test('fmix32 matches MurmurHash3 reference values', () => {
  // Reference: MurmurHash3_x86_32's fmix32 applied to these inputs (computed with uint32 C arithmetic).
  assert.equal(fmix32(0), 0);
  assert.equal(fmix32(1), 0x514e28b7);
  assert.equal(fmix32(0xffffffff), 0x81f16f39);
});

test('uniform draws are float32 values in [lo, hi) and reproducible from the seed alone', () => {
  const key = streamKey(1234, 'fixed-uniform');
  const a = uniformMatrix(key, 50, 16, -10, 10);
  const b = uniformMatrix(streamKey(1234, 'fixed-uniform'), 50, 16, -10, 10);
  assert.deepEqual(a, b);
  for (const v of a) {
    assert.ok(v >= -10 && v < 10);
    assert.equal(v, Math.fround(v));
  }
  const other = uniformMatrix(streamKey(1235, 'fixed-uniform'), 50, 16, -10, 10);
  assert.notDeepEqual(a, other);
  // Element i depends on the counter only: a sub-matrix is a prefix of the big one.
  assert.deepEqual(uniformMatrix(key, 3, 16, -10, 10), a.subarray(0, 48));
});

test('uniform draws have the moments of U[0,1)', () => {
  const key = streamKey(7);
  let sum = 0;
  let sq = 0;
  const n = 100_000;
  for (let i = 0; i < n; i++) {
    const u = unitAt(key, i);
    sum += u;
    sq += u * u;
  }
  assert.ok(Math.abs(sum / n - 0.5) < 0.005, `mean ${sum / n}`);
  assert.ok(Math.abs(sq / n - sum ** 2 / n ** 2 - 1 / 12) < 0.002);
});

test('hash counters differ between streams and positions', () => {
  const seen = new Set<number>();
  for (let i = 0; i < 10_000; i++) seen.add(hashAt(streamKey(1, 'a'), i));
  assert.equal(seen.size, 10_000);
  assert.notEqual(hashAt(streamKey(1, 'a'), 0), hashAt(streamKey(1, 'b'), 0));
});

test('l2-normalised rows have unit norm', () => {
  const m = l2NormaliseRows(uniformMatrix(streamKey(3), 20, 64, -1, 1), 20, 64);
  for (let r = 0; r < 20; r++) {
    let ss = 0;
    for (let c = 0; c < 64; c++) ss += m[r * 64 + c] ** 2;
    assert.ok(Math.abs(Math.sqrt(ss) - 1) < 1e-6);
  }
});

test('SeededRandom: reproducible, resumable from its state, shuffles are permutations', () => {
  const a = new SeededRandom(42, 'x');
  const first = [a.next(), a.next(), a.next()];
  const b = new SeededRandom(42, 'x');
  b.next();
  const resumed = new SeededRandom(42, 'x', b.state);
  assert.deepEqual([resumed.next(), resumed.next()], first.slice(1));
  const items = Array.from({ length: 100 }, (_, i) => i);
  const shuffled = new SeededRandom(1).shuffle([...items]);
  assert.notDeepEqual(shuffled, items);
  assert.deepEqual(
    [...shuffled].sort((x, y) => x - y),
    items,
  );
  assert.throws(() => new SeededRandom(-1), /seed/);
});
