import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chooseHadamardColumns, fwht, hadamardEntry, hadamardOrder, hadamardRows } from '../core/hadamard.ts';

test('Sylvester entries satisfy H Hᵀ = n I', () => {
  const n = 16;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      let dot = 0;
      for (let k = 0; k < n; k++) dot += hadamardEntry(i, k) * hadamardEntry(j, k);
      assert.equal(dot, i === j ? n : 0);
    }
  }
});

test('every one of |V| >> d words gets a distinct target vector', () => {
  const V = 6000;
  const d = 64;
  const n = hadamardOrder(V, d);
  assert.equal(n, 8192);
  const cols = chooseHadamardColumns(n, d, 1);
  assert.equal(cols.length, d);
  assert.equal(new Set(cols).size, d);
  const rows = hadamardRows(V, cols);
  const seen = new Set<string>();
  for (let i = 0; i < V; i++) seen.add(rows.subarray(i * d, (i + 1) * d).join(','));
  assert.equal(seen.size, V);
});

test("Hoffer's first-d-columns truncation would collapse rows (why we choose columns)", () => {
  const V = 300;
  const d = 32;
  const first = Int32Array.from({ length: d }, (_, i) => i);
  const rows = hadamardRows(V, first);
  const seen = new Set<string>();
  for (let i = 0; i < V; i++) seen.add(rows.subarray(i * d, (i + 1) * d).join(','));
  assert.equal(seen.size, d);
});

test('fast Walsh-Hadamard transform equals the dense product', () => {
  const n = 32;
  const x = Float64Array.from({ length: n }, (_, i) => Math.sin(i + 1));
  const dense = Float64Array.from({ length: n }, (_, i) => {
    let s = 0;
    for (let k = 0; k < n; k++) s += hadamardEntry(i, k) * x[k];
    return s;
  });
  fwht(x);
  for (let i = 0; i < n; i++) assert.ok(Math.abs(x[i] - dense[i]) < 1e-9);
});

test('column choice refuses d < log2 n', () => {
  assert.throws(() => chooseHadamardColumns(1024, 5, 1), /at least log2/);
});
