/* eslint-disable no-bitwise -- the seeded hash's constants are bit patterns. */
/**
 * ONNX subgraphs that regenerate frost's seeded frozen matrices (core/random.ts) from their stream
 * key, so an exported model stores a few bytes instead of a dense [rows, cols] float32 matrix.
 *
 * The subgraph is core/random.ts's generator written node for node: every formula line below is
 * the TypeScript expression, and the nodes under it compute exactly that. All its inputs are
 * constants, so onnxruntime folds it into one initializer when the session is created; per-run cost
 * is the same as a stored matrix (bench/frozen-heads.ts measures this).
 *
 * Why uint32 arithmetic works as is: ONNX Mul on tensor(uint32) is computed by onnxruntime's CPU
 * kernel (native and WebAssembly builds) in C++ `uint32_t`, whose overflow wraps modulo 2^32 by the
 * language standard: exactly `Math.imul(a, b) >>> 0`. BitShift (opset 11) and BitwiseXor
 * (opset 18) are defined on uint32. So no 16-bit splitting or int64 masking is needed; the tests
 * compare the materialised matrix bit for bit in onnxruntime-node and onnxruntime-web.
 */
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { FMIX_M1, FMIX_M2, GOLDEN } from '../../core/random.ts';

/** Arguments of core/random.ts's `uniformMatrix(key, rows, cols, lo, hi)`. */
export interface SeededUniformSpec {
  /** Stream key: `streamKey(seed, stream)`. */
  key: number;
  rows: number;
  cols: number;
  lo: number;
  hi: number;
}

/**
 * Emits nodes computing `uniformMatrix(key, rows, cols, lo, hi)` as a float32 [rows, cols] value,
 * bit for bit; returns its name. The key is the only seed-dependent value stored.
 */
export function seededUniformMatrixOnnx(g: GraphBuilder, spec: SeededUniformSpec): string {
  const { key, rows, cols, lo, hi } = spec;
  const count = rows * cols;
  if (!Number.isInteger(count) || count < 1 || count > 0xffffffff) {
    throw new RangeError(`a seeded matrix needs 1 to 2^32 cells, got ${rows}x${cols}`);
  }
  if (!Number.isInteger(key) || key < 0 || key > 0xffffffff) throw new RangeError(`'key' must be a uint32, got ${key}`);
  if (g.opset < 18)
    throw new Error(
      `regenerating a seeded matrix needs opset 18 (BitwiseXor); graph has ${g.opset}: export with storeFrozen`,
    );
  const u32 = (value: number, hint: string) => g.constant('uint32', new Uint32Array([value >>> 0]), [], hint);
  const shiftRight = (x: string, bits: number) => g.op('BitShift', [x, u32(bits, 'shift')], { direction: 'RIGHT' });

  // i = 0, 1, …, rows*cols - 1   (Range has no uint32 kernel: count in int64, then Cast; i < 2^32)
  const i = g.cast(
    g.op('Range', [g.constInt64(0, [], 'start'), g.constInt64(count, [], 'count'), g.constInt64(1, [], 'delta')]),
    'uint32',
  );
  // h = Math.imul(i, GOLDEN) ^ key
  let h = g.op('Mul', [i, u32(GOLDEN, 'golden')]);
  h = g.op('BitwiseXor', [h, u32(key, 'key')]);
  // fmix32: h ^= h >>> 16
  h = g.op('BitwiseXor', [h, shiftRight(h, 16)]);
  // h = Math.imul(h, FMIX_M1)
  h = g.op('Mul', [h, u32(FMIX_M1, 'fmix_m1')]);
  // h ^= h >>> 13
  h = g.op('BitwiseXor', [h, shiftRight(h, 13)]);
  // h = Math.imul(h, FMIX_M2)
  h = g.op('Mul', [h, u32(FMIX_M2, 'fmix_m2')]);
  // h ^= h >>> 16
  h = g.op('BitwiseXor', [h, shiftRight(h, 16)]);
  // u = (h >>> 8) * 2^-24   (an integer < 2^24 casts to float32 exactly; the power of two scales exactly)
  const u = g.op('Mul', [g.cast(shiftRight(h, 8), 'float32'), g.constFloat(2 ** -24, [], 'two_pow_m24')]);
  // w = fround(fround(u * fround(hi - lo)) + fround(lo))   (float32 Mul then Add: the same two roundings)
  const w = g.op('Add', [
    g.op('Mul', [u, g.constFloat(Math.fround(hi - lo), [], 'span')]),
    g.constFloat(Math.fround(lo), [], 'lo'),
  ]);
  // W = w as [rows, cols], row-major: cell (r, c) is counter r*cols + c
  return g.op('Reshape', [w, g.constInt64([rows, cols], [2], 'shape')]);
}

/**
 * Emits nodes computing `l2NormaliseRows(m, rows, cols)` of a float32 [rows, cols] value `m`;
 * returns the name of the normalised matrix.
 */
export function l2NormaliseRowsOnnx(g: GraphBuilder, m: string, cols: number): string {
  // sq = fround(v * v)
  const sq = g.op('Mul', [m, m]);
  // ss = fround(…fround(fround(sq_0 + sq_1) + sq_2)… + sq_{cols-1}): the prefix sums' last column.
  // Porting note: a ReduceSumSquare would be one node, but onnxruntime adds in a vectorised order
  // that differs from l2NormaliseRows' left-to-right loop by a few ulps; CumSum adds each column to
  // the running sum in float32, left to right, so the norms (and the matrix) match bit for bit.
  const prefix = g.op('CumSum', [sq, g.constInt64(1, [], 'axis')]);
  const ss = g.slice(prefix, [cols - 1], [cols], [1]);
  // norm = fround(sqrt(ss))   (sqrt is correctly rounded in float32 and in double-then-fround alike)
  const norm = g.op('Sqrt', [ss]);
  // out = fround(v / norm)
  return g.op('Div', [m, norm]);
}
