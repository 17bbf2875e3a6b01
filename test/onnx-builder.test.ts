/**
 * Tests of frost's ONNX emitter: small real graphs are checked with ONNX's
 * Python checker and run in onnxruntime-node (and some in onnxruntime-web),
 * against values computed here in plain JS.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { encodeAttribute } from '../core/onnx/attributes.ts';
import { float16BitsToFloat32, float32ToFloat16Bits, fromFloat16Array, toFloat16Array } from '../core/onnx/float16.ts';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { AttributeType, decodeModel } from '../core/onnx/proto.ts';

/** The fields of a decoded ModelProto these tests read (protobufjs's JSON-like form). */
interface DecodedModel {
  ir_version: number;
  opset_import: { domain: string; version: number }[];
  producer_name: string;
  doc_string: string;
  metadata_props: { key: string; value: string }[];
  graph: {
    input: { type: { tensor_type: { shape: { dim: unknown[] } } } }[];
    initializer: { name: string; data_type: number; float_data?: number[]; raw_data: Uint8Array }[];
    node: { op_type: string; input: string[] }[];
  };
}
const decode = (bytes: Uint8Array): DecodedModel => decodeModel(bytes) as unknown as DecodedModel;
import { streamKey, uniformMatrix } from '../core/random.ts';
import { checkModel, runOrt, runOrtWeb, type TensorResult } from './helpers/onnx-check.ts';

// ---- helpers -----------------------------------------------------------------

/** Deterministic uniform floats in [-1, 1), from frost's own seeded generator. */
const randoms = (seed: number, n: number): Float32Array => uniformMatrix(streamKey(seed, 'test-randoms'), 1, n, -1, 1);

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-5, what = 'values'): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const diff = Math.abs(actual[i]! - expected[i]!);
    assert.ok(diff <= tol * (1 + Math.abs(expected[i]!)), `${what}[${i}]: ${actual[i]} vs ${expected[i]}`);
  }
}

function out(results: Record<string, TensorResult>, name: string): TensorResult {
  const t = results[name];
  assert.ok(t, `missing output ${name}`);
  return t;
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

// ---- float16 -----------------------------------------------------------------

test('fp16: known values', () => {
  assert.equal(float32ToFloat16Bits(1.0), 0x3c00);
  assert.equal(float32ToFloat16Bits(65504), 0x7bff);
  assert.equal(float32ToFloat16Bits(1e-8), 0);
  assert.equal(float32ToFloat16Bits(0.1), 0x2e66);
  assert.equal(float32ToFloat16Bits(-2), 0xc000);
  assert.equal(float32ToFloat16Bits(-0), 0x8000);
  assert.equal(float32ToFloat16Bits(65519), 0x7bff); // just under the rounding boundary
  assert.equal(float32ToFloat16Bits(65520), 0x7c00); // ties to even -> overflows to Inf
  assert.equal(float32ToFloat16Bits(Infinity), 0x7c00);
  assert.equal(float32ToFloat16Bits(-Infinity), 0xfc00);
  assert.equal(float32ToFloat16Bits(2 ** -24), 0x0001); // smallest subnormal
  assert.equal(float32ToFloat16Bits(2 ** -25), 0x0000); // tie between 0 and 2^-24 -> even (0)
  assert.equal(float32ToFloat16Bits(3 * 2 ** -25), 0x0002); // tie between 1 and 2 ulps -> even (2)
  assert.equal(float32ToFloat16Bits(2 ** -14), 0x0400); // smallest normal
  assert.equal(float32ToFloat16Bits(1 + 2 ** -11), 0x3c00); // tie -> even mantissa
  assert.equal(float32ToFloat16Bits(1 + 3 * 2 ** -11), 0x3c02); // tie -> even mantissa (up)
  const nan = float32ToFloat16Bits(NaN);
  assert.equal(nan & 0x7c00, 0x7c00);
  assert.notEqual(nan & 0x3ff, 0);
  assert.ok(Number.isNaN(float16BitsToFloat32(nan)));
  assert.equal(float16BitsToFloat32(0x3c00), 1);
  assert.equal(float16BitsToFloat32(0x7bff), 65504);
  assert.equal(float16BitsToFloat32(0x2e66), 0.0999755859375);
  assert.equal(float16BitsToFloat32(0x0001), 2 ** -24);
});

test('fp16: every half value round-trips through float32', () => {
  for (let bits = 0; bits < 0x10000; bits++) {
    const value = float16BitsToFloat32(bits);
    if (Number.isNaN(value)) continue;
    assert.equal(float32ToFloat16Bits(value), bits, `bits 0x${bits.toString(16)}`);
  }
});

test('fp16: matches numpy astype(float16) on random floats', (t) => {
  const values = randoms(7, 4000).map((v, i) => v * 2 ** ((i % 40) - 28)); // spans subnormals to overflow
  const script =
    'import sys, numpy as np; a = np.frombuffer(sys.stdin.buffer.read(), "<f4"); sys.stdout.buffer.write(a.astype(np.float16).tobytes())';
  const res = spawnSync('/usr/bin/python3', ['-c', script], { input: Buffer.from(values.buffer) });
  if (res.status !== 0) {
    t.skip(`no numpy: ${res.stderr}`);
    return;
  }
  const expected = new Uint16Array(res.stdout.buffer, res.stdout.byteOffset, values.length);
  assert.deepEqual(Array.from(toFloat16Array(values)), Array.from(expected));
  assertClose(fromFloat16Array(expected), Array.from(expected, float16BitsToFloat32), 0);
});

// ---- graphs --------------------------------------------------------------------

test('MatMul + Add + Softmax with dynamic batch, in onnxruntime-node and -web', async () => {
  const [inDim, outDim] = [4, 3];
  const W = randoms(1, inDim * outDim);
  const bias = randoms(2, outDim);
  const b = new GraphBuilder('mlp');
  const x = b.input('x', 'float32', ['batch', inDim]);
  const probs = b.scope('head', () => {
    const logits = b.op('Add', [
      b.op('MatMul', [x, b.initializer('W', { dtype: 'float32', dims: [inDim, outDim], data: W })]),
      b.constFloat(bias),
    ]);
    return b.op('Softmax', [logits], { axis: -1 });
  });
  b.output(probs, 'probs', 'float32', ['batch', outDim]);
  const bytes = b.toBytes({ docString: 'test model', metadata: { frost_test: '1' } });

  const report = checkModel(bytes);
  assert.deepEqual(report.unchecked, []);

  for (const batch of [1, 5]) {
    const xs = randoms(10 + batch, batch * inDim);
    const expected = new Float32Array(batch * outDim);
    for (let r = 0; r < batch; r++) {
      const z = Array.from({ length: outDim }, (_, j) => {
        let s = bias[j]!;
        for (let i = 0; i < inDim; i++) s += xs[r * inDim + i]! * W[i * outDim + j]!;
        return s;
      });
      const m = Math.max(...z);
      const e = z.map((v) => Math.exp(v - m));
      const sum = e.reduce((p, q) => p + q, 0);
      e.forEach((v, j) => (expected[r * outDim + j] = v / sum));
    }
    for (const run of [runOrt, runOrtWeb]) {
      const y = out(await run(bytes, { x: { dims: [batch, inDim], data: xs } }), 'probs');
      assert.deepEqual(y.dims, [batch, outDim]);
      assertClose(y.data as Float32Array, expected, 1e-5, run.name);
    }
  }

  const model = decode(bytes);
  assert.equal(model.ir_version, 8);
  assert.deepEqual(model.opset_import, [{ domain: '', version: 18 }]);
  assert.equal(model.producer_name, 'frost');
  assert.equal(model.doc_string, 'test model');
  assert.deepEqual(model.metadata_props, [{ key: 'frost_test', value: '1' }]);
  assert.deepEqual(model.graph.input[0].type.tensor_type.shape.dim, [{ dim_param: 'batch' }, { dim_value: inDim }]);
  // Weights go to raw_data (little-endian), never to float_data.
  const w = model.graph.initializer.find((t) => t.name === 'head/W');
  assert.ok(w);
  assert.equal(w.float_data, undefined);
  assert.deepEqual(new Float32Array(new Uint8Array(w.raw_data).buffer), W);
  assert.deepEqual(b.initializerBytesByScope(), { head: (inDim * outDim + outDim) * 4 });
});

/** ONNX GRU (layout 0, default activations), straight from the spec's equations. */
function gruReference(
  X: Float32Array,
  W: Float32Array,
  R: Float32Array,
  B: Float32Array,
  h0: Float32Array,
  dims: { T: number; N: number; I: number; H: number; D: number },
  linearBeforeReset: boolean,
): { Y: Float32Array; Yh: Float32Array } {
  const { T, N, I, H, D } = dims;
  const Y = new Float32Array(T * D * N * H);
  const Yh = new Float32Array(D * N * H);
  for (let d = 0; d < D; d++) {
    const w = (g: number, j: number, i: number): number => W[((d * 3 + g) * H + j) * I + i]!;
    const r = (g: number, j: number, k: number): number => R[((d * 3 + g) * H + j) * H + k]!;
    const wb = (g: number, j: number): number => B[d * 6 * H + g * H + j]!;
    const rb = (g: number, j: number): number => B[d * 6 * H + (3 + g) * H + j]!;
    const h = Array.from({ length: N }, (_, n) => Array.from(h0.subarray((d * N + n) * H, (d * N + n + 1) * H)));
    for (let step = 0; step < T; step++) {
      const t = d === 0 ? step : T - 1 - step; // the reverse direction reads the sequence backwards
      for (let n = 0; n < N; n++) {
        const x = X.subarray((t * N + n) * I, (t * N + n + 1) * I);
        const hp = h[n]!;
        const xw = (g: number, j: number): number => x.reduce((s, v, i) => s + v * w(g, j, i), 0) + wb(g, j);
        const hr = (g: number, j: number, hv: number[]): number => hv.reduce((s, v, k) => s + v * r(g, j, k), 0);
        const z = Array.from({ length: H }, (_, j) => sigmoid(xw(0, j) + hr(0, j, hp) + rb(0, j)));
        const rt = Array.from({ length: H }, (_, j) => sigmoid(xw(1, j) + hr(1, j, hp) + rb(1, j)));
        const gated = hp.map((v, k) => rt[k]! * v);
        const hh = Array.from({ length: H }, (_, j) =>
          linearBeforeReset
            ? Math.tanh(xw(2, j) + rt[j]! * (hr(2, j, hp) + rb(2, j)))
            : Math.tanh(xw(2, j) + hr(2, j, gated) + rb(2, j)),
        );
        h[n] = hh.map((v, j) => (1 - z[j]!) * v + z[j]! * hp[j]!);
        Y.set(h[n]!, ((t * D + d) * N + n) * H);
      }
    }
    for (let n = 0; n < N; n++) Yh.set(h[n]!, (d * N + n) * H);
  }
  return { Y, Yh };
}

test('bidirectional GRU with a skipped optional input', async () => {
  const dims = { T: 4, N: 2, I: 3, H: 5, D: 2 };
  const { T, N, I, H, D } = dims;
  const W = randoms(21, D * 3 * H * I);
  const R = randoms(22, D * 3 * H * H);
  const B = randoms(23, D * 6 * H);
  const h0 = randoms(24, D * N * H);
  const X = randoms(25, T * N * I);
  for (const linearBeforeReset of [true, false]) {
    const b = new GraphBuilder('gru');
    const x = b.input('x', 'float32', ['seq', 'batch', I]);
    const h = b.input('h0', 'float32', [D, 'batch', H]);
    const [y, yh] = b.scope('encoder', () =>
      b.node(
        'GRU',
        // X, W, R, B, sequence_lens (skipped), initial_h
        [
          x,
          b.initializer('W', { dtype: 'float32', dims: [D, 3 * H, I], data: W }),
          b.initializer('R', { dtype: 'float32', dims: [D, 3 * H, H], data: R }),
          b.initializer('B', { dtype: 'float32', dims: [D, 6 * H], data: B }),
          '',
          h,
        ],
        { direction: 'bidirectional', hidden_size: H, linear_before_reset: linearBeforeReset ? 1 : 0 },
        { outputs: 2 },
      ),
    );
    b.output(y!, 'y', 'float32', ['seq', D, 'batch', H]);
    b.output(yh!, 'y_h', 'float32', [D, 'batch', H]);
    const bytes = b.toBytes();
    checkModel(bytes);
    const expected = gruReference(X, W, R, B, h0, dims, linearBeforeReset);
    const feeds = { x: { dims: [T, N, I], data: X }, h0: { dims: [D, N, H], data: h0 } };
    for (const run of [runOrt, runOrtWeb]) {
      const res = await run(bytes, feeds);
      assert.deepEqual(out(res, 'y').dims, [T, D, N, H]);
      assertClose(out(res, 'y').data as Float32Array, expected.Y, 1e-5, `${run.name} Y`);
      assertClose(out(res, 'y_h').data as Float32Array, expected.Yh, 1e-5, `${run.name} Y_h`);
    }
  }
});

test('Gather on an int64 input (embedding lookup)', async () => {
  const [V, E] = [7, 3];
  const table = randoms(31, V * E);
  const b = new GraphBuilder('embed');
  const ids = b.input('ids', 'int64', ['batch', 'src_len']);
  const emb = b.scope('encoder', () =>
    b.op('Gather', [b.initializer('embedding', { dtype: 'float32', dims: [V, E], data: table }), ids], { axis: 0 }),
  );
  b.output(emb, 'emb', 'float32', ['batch', 'src_len', E]);
  const bytes = b.toBytes();
  checkModel(bytes);
  const idList = [0n, 3n, 6n, -1n, 2n, 2n]; // -1: Gather counts negative indices from the end
  const res = out(await runOrt(bytes, { ids: { dims: [2, 3], data: BigInt64Array.from(idList) } }), 'emb');
  assert.deepEqual(res.dims, [2, 3, E]);
  const expected = idList.flatMap((id) => {
    const row = (Number(id) + V) % V;
    return Array.from(table.subarray(row * E, (row + 1) * E));
  });
  assertClose(res.data as Float32Array, expected, 0);
});

test('opset-aware helpers (reduce, split, slice, unsqueeze, squeeze) at opsets 11, 13, 17, 18', async () => {
  for (const opset of [11, 13, 17, 18]) {
    const b = new GraphBuilder('helpers', { opset });
    const x = b.input('x', 'float32', ['batch', 6]);
    const [left, right] = b.split(x, 1, [2, 4]);
    const mean = b.reduce('ReduceMean', right!, [1], true); // [batch, 1]
    const second = b.slice(left!, [1], [Number.MAX_SAFE_INTEGER], [1]); // [batch, 1]: column 1
    const stepped = b.slice(x, [0], [6], [1], [2]); // [batch, 3]: columns 0, 2, 4
    const sum = b.op('Add', [mean, second]);
    const back = b.squeeze(b.unsqueeze(sum, [0]), [0]);
    const total = b.reduce('ReduceSum', x, [1], false); // [batch]
    const max = b.reduce('ReduceMax', x, undefined, false); // scalar: all axes
    b.output(back, 'mixed', 'float32', ['batch', 1]);
    b.output(total, 'total', 'float32', ['batch']);
    b.output(max, 'max', 'float32', []);
    b.output(stepped, 'stepped', 'float32', ['batch', 3]);
    const bytes = b.toBytes();

    const report = checkModel(bytes);
    assert.equal(report.modelOpset, opset);
    if (report.checkedOpset < 18 && opset === 18) {
      // The opset-17 checker saw ReduceMean/ReduceMax with axes as attributes; nothing was skipped.
      assert.ok(
        report.lowered.some((l) => l.startsWith('ReduceMean')),
        JSON.stringify(report),
      );
    }
    assert.deepEqual(report.unchecked, []);

    const model = decode(bytes);
    const meanNode = model.graph.node.find((n) => n.op_type === 'ReduceMean');
    assert.ok(meanNode);
    assert.equal(meanNode.input.length, opset >= 18 ? 2 : 1, `ReduceMean axes form at opset ${opset}`);
    const splitNode = model.graph.node.find((n) => n.op_type === 'Split');
    assert.ok(splitNode);
    assert.equal(splitNode.input.length, opset >= 13 ? 2 : 1, `Split form at opset ${opset}`);

    for (const batch of [1, 3]) {
      const xs = randoms(40 + batch, batch * 6);
      const rows = Array.from({ length: batch }, (_, r) => Array.from(xs.subarray(r * 6, r * 6 + 6)));
      const res = await runOrt(bytes, { x: { dims: [batch, 6], data: xs } });
      assertClose(
        out(res, 'mixed').data as Float32Array,
        rows.map((r) => (r[2]! + r[3]! + r[4]! + r[5]!) / 4 + r[1]!),
        1e-6,
        'mixed',
      );
      assert.deepEqual(out(res, 'mixed').dims, [batch, 1]);
      assertClose(
        out(res, 'total').data as Float32Array,
        rows.map((r) => r.reduce((p, q) => p + q, 0)),
        1e-6,
        'total',
      );
      assertClose(out(res, 'max').data as Float32Array, [Math.max(...xs)], 0, 'max');
      assertClose(
        out(res, 'stepped').data as Float32Array,
        rows.flatMap((r) => [r[0]!, r[2]!, r[4]!]),
        0,
        'stepped',
      );
    }
  }
});

test('uint32 hashing with Mul, BitShift, BitwiseXor, Cast (opset 18)', async () => {
  const K = 0x9e3779b1;
  const b = new GraphBuilder('hash');
  const x = b.input('x', 'uint32', ['n']);
  const k = b.constant('uint32', [K], [1], 'golden');
  const mixed = b.op('Mul', [x, k]); // wraps modulo 2^32
  const shifted = b.op('BitShift', [mixed, b.constant('uint32', [15], [1])], { direction: 'RIGHT' });
  const h = b.op('BitwiseXor', [mixed, shifted]);
  const left = b.op('BitShift', [h, b.constant('uint32', [3], [1])], { direction: 'LEFT' });
  const unit = b.op('Mul', [b.cast(h, 'float32'), b.constFloat(2 ** -32)]);
  b.output(h, 'h', 'uint32', ['n']);
  b.output(left, 'left', 'uint32', ['n']);
  b.output(unit, 'unit', 'float32', ['n']);
  const bytes = b.toBytes();

  const report = checkModel(bytes);
  if (report.checkedOpset < 18)
    assert.deepEqual(
      report.unchecked.map((u) => u.split('(')[0]),
      ['BitwiseXor'],
    );

  const xs = Uint32Array.from([0, 1, 2, 12345, 0xffffffff, 0x80000000, 987654321]);
  const expH = Array.from(xs, (v) => {
    const m = Math.imul(v, K) >>> 0;
    return (m ^ (m >>> 15)) >>> 0;
  });
  for (const run of [runOrt, runOrtWeb]) {
    const res = await run(bytes, { x: { dims: [xs.length], data: xs } });
    assert.equal(out(res, 'h').dtype, 'uint32');
    assert.deepEqual(Array.from(out(res, 'h').data as Uint32Array), expH, run.name);
    assert.deepEqual(
      Array.from(out(res, 'left').data as Uint32Array),
      expH.map((v) => (v << 3) >>> 0),
      run.name,
    );
    assertClose(
      out(res, 'unit').data as Float32Array,
      expH.map((v) => Math.fround(Math.fround(v) * 2 ** -32)),
      0,
      run.name,
    );
  }
});

test('float16 initializers and inputs (raw bits) in onnxruntime', async () => {
  const b = new GraphBuilder('half');
  const x = b.input('x', 'float16', [4]);
  const c = b.initializer('c', { dtype: 'float16', dims: [4], data: Float32Array.from([1, 0.1, 65504, 1e-8]) });
  const bits = b.initializer('bits', { dtype: 'float16', dims: [2], data: Uint16Array.from([0x3c00, 0xc000]) });
  b.output(b.op('Add', [x, c]), 'sum', 'float16', [4]);
  b.output(b.cast(bits, 'float32'), 'bits32', 'float32', [2]);
  const bytes = b.toBytes();
  checkModel(bytes);
  const model = decode(bytes);
  const stored = model.graph.initializer.find((t) => t.name === 'c');
  assert.ok(stored);
  assert.equal(stored.data_type, 10);
  assert.deepEqual(Array.from(new Uint16Array(new Uint8Array(stored.raw_data).buffer)), [0x3c00, 0x2e66, 0x7bff, 0]);
  for (const run of [runOrt, runOrtWeb]) {
    const res = await run(bytes, { x: { dtype: 'float16', dims: [4], data: toFloat16Array([1, 1, 0, 0]) } });
    assert.deepEqual(Array.from(out(res, 'sum').data as Uint16Array), [0x4000, 0x3c66, 0x7bff, 0], run.name);
    assert.deepEqual(Array.from(out(res, 'bits32').data as Float32Array), [1, -2], run.name);
  }
});

test('If with subgraphs that read outer values', async () => {
  const b = new GraphBuilder('branch');
  const x = b.input('x', 'float32', [3]);
  const cond = b.input('cond', 'bool', []);
  const thenG = b.subgraph('then');
  thenG.output(thenG.op('Add', [x, thenG.constFloat(10)]), 'then_out', 'float32', [3]);
  const elseG = b.subgraph('else');
  elseG.output(elseG.op('Mul', [x, elseG.constFloat(-1)]), 'else_out', 'float32', [3]);
  b.output(b.op('If', [cond], { then_branch: { graph: thenG }, else_branch: { graph: elseG } }), 'y', 'float32', [3]);
  const bytes = b.toBytes();
  checkModel(bytes);
  const xs = Float32Array.from([1, 2, 3]);
  for (const [c, expected] of [
    [1, [11, 12, 13]],
    [0, [-1, -2, -3]],
  ] as const) {
    const res = await runOrt(bytes, {
      x: { dims: [3], data: xs },
      cond: { dtype: 'bool', dims: [], data: Uint8Array.from([c]) },
    });
    assert.deepEqual(Array.from(out(res, 'y').data as Float32Array), expected);
  }
  // Subgraphs share the parent's namespace: no name can be defined twice across them.
  assert.throws(() => thenG.input('x', 'float32', [3]), /duplicate value name 'x'/);
});

// ---- attributes, names and errors --------------------------------------------

test('attribute typing: ints vs floats', async () => {
  assert.equal(encodeAttribute('axis', 1).type, AttributeType.INT);
  assert.equal(encodeAttribute('alpha', 1).type, AttributeType.FLOAT);
  assert.equal(encodeAttribute('epsilon', 0).type, AttributeType.FLOAT);
  assert.equal(encodeAttribute('whatever', 0.5).type, AttributeType.FLOAT);
  assert.equal(encodeAttribute('alpha', { int: 1 }).type, AttributeType.INT);
  assert.equal(encodeAttribute('axis', { float: 2 }).type, AttributeType.FLOAT);
  assert.equal(encodeAttribute('perm', [0, 2, 1]).type, AttributeType.INTS);
  assert.equal(encodeAttribute('perm', []).type, AttributeType.INTS);
  assert.equal(encodeAttribute('activation_alpha', [1, 2]).type, AttributeType.FLOATS);
  assert.equal(encodeAttribute('anything', [0.5, 1]).type, AttributeType.FLOATS);
  assert.equal(encodeAttribute('anything', Float32Array.from([1])).type, AttributeType.FLOATS);
  assert.equal(encodeAttribute('activations', []).type, AttributeType.STRINGS);
  assert.equal(encodeAttribute('activations', ['Sigmoid', 'Tanh']).type, AttributeType.STRINGS);
  assert.equal(encodeAttribute('direction', 'LEFT').type, AttributeType.STRING);
  assert.equal(encodeAttribute('value', { dtype: 'float32', dims: [], data: [1] }).type, AttributeType.TENSOR);
  assert.throws(() => encodeAttribute('axis', { int: 1.5 }), /not an integer/);
  assert.throws(() => encodeAttribute('axis', NaN), /not a number/);

  // A real model that only loads if alpha/beta are FLOAT and transB is INT.
  const b = new GraphBuilder('gemm');
  const a = b.input('a', 'float32', [2, 2]);
  const m = b.constFloat([1, 2, 3, 4], [2, 2]);
  const value = b.op('ConstantOfShape', [b.constInt64([2], [1])], {
    value: { dtype: 'float32', dims: [1], data: [0.5] },
  });
  b.output(b.op('Gemm', [a, m, value], { alpha: 1, beta: 2, transB: 1 }), 'y', 'float32', [2, 2]);
  const bytes = b.toBytes();
  checkModel(bytes);
  const res = await runOrt(bytes, { a: { dims: [2, 2], data: Float32Array.from([1, 0, 0, 1]) } });
  assert.deepEqual(Array.from(out(res, 'y').data as Float32Array), [2, 4, 3, 5]); // A·Mᵀ + 2·0.5
});

test('names: scopes, fresh names, shared constants, byte summary', () => {
  const b = new GraphBuilder('names');
  const x = b.input('x', 'float32', [2]);
  const n1 = b.fresh('t');
  const n2 = b.fresh('t');
  assert.notEqual(n1, n2);
  b.scope('encoder', () => {
    assert.equal(b.fresh('h'), 'encoder/h_0');
    assert.equal(b.initializer('W', { dtype: 'float32', dims: [2], data: [1, 2] }), 'encoder/W');
    b.scope('layer0', () =>
      assert.equal(b.initializer('b', { dtype: 'float32', dims: [1], data: [1] }), 'encoder/layer0/b'),
    );
    assert.deepEqual(b.node('Split', [x], { axis: 0 }, { outputs: ['lo', 'hi'], name: 'split' }), [
      'encoder/lo',
      'encoder/hi',
    ]);
  });
  b.scope('head', () =>
    assert.equal(b.initializer('head/targets', { dtype: 'float16', dims: [3], data: [1, 2, 3] }), 'head/targets'),
  );
  const c1 = b.constInt64([1, 2]);
  assert.equal(b.constInt64([1, 2]), c1, 'identical small constants are shared');
  assert.notEqual(b.constInt64([1, 3]), c1);
  assert.notEqual(b.constFloat([1, 2]), c1);
  // Unscoped names are their own group (the first path segment is the whole name).
  assert.deepEqual(b.initializerBytesByScope(), { encoder: 12, head: 6, const_0: 16, const_1: 16, const_2: 8 });
});

test('errors: duplicate names, unknown inputs and dtypes, bad tensors', () => {
  const b = new GraphBuilder('errors');
  const x = b.input('x', 'float32', [2]);
  b.initializer('w', { dtype: 'float32', dims: [2], data: [1, 2] });
  assert.throws(() => b.initializer('w', { dtype: 'float32', dims: [2], data: [1, 2] }), /duplicate value name 'w'/);
  assert.throws(() => b.input('x', 'float32', [2]), /duplicate value name 'x'/);
  assert.throws(() => b.initializer('x', { dtype: 'float32', dims: [1], data: [1] }), /duplicate value name 'x'/);
  b.node('Relu', [x], {}, { outputs: ['r'] });
  assert.throws(() => b.node('Relu', [x], {}, { outputs: ['r'] }), /duplicate value name 'r'/);
  assert.throws(() => b.node('Split', [x], {}, { outputs: ['s', 's'] }), /duplicate value name 's'/);
  b.op('Relu', [x], {}, { name: 'relu' });
  assert.throws(() => b.op('Relu', [x], {}, { name: 'relu' }), /duplicate node name 'relu'/);
  assert.throws(() => b.op('Relu', ['nope']), /unknown input 'nope'/);
  assert.doesNotThrow(() => b.node('GRU', [x, 'w', 'w', '', '', ''], { hidden_size: 1 }, { outputs: ['', 'gru_h'] }));
  assert.throws(() => b.input('y', 'float64' as never, [2]), /unknown dtype 'float64'/);
  assert.throws(
    () => b.initializer('z', { dtype: 'complex' as never, dims: [1], data: [1] }),
    /unknown dtype 'complex'/,
  );
  assert.throws(
    () => b.initializer('z', { dtype: 'float32', dims: [3], data: [1, 2] }),
    /2 elements but dims \[3\] need 3/,
  );
  assert.throws(
    () => b.initializer('z', { dtype: 'int64', dims: [1], data: Float32Array.from([1]) }),
    /does not match dtype 'int64'/,
  );
  assert.throws(() => b.output(x, 'r', 'float32', [2]), /duplicate value name 'r'/);
  assert.throws(() => new GraphBuilder('empty').toBytes(), /has no outputs/);
  // A failed node leaves nothing behind: the same output name is still free.
  assert.throws(() => b.node('Relu', [x], { bad: NaN }, { outputs: ['free'] }), /not a number/);
  assert.doesNotThrow(() => b.node('Relu', [x], {}, { outputs: ['free'] }));
});

test('checkModel reports the checker error', () => {
  const b = new GraphBuilder('bad');
  const x = b.input('x', 'float32', [2]);
  b.output(b.op('NoSuchOp', [x]), 'y', 'float32', [2]);
  assert.throws(() => checkModel(b.toBytes()), /onnx checker failed:[\s\S]*NoSuchOp/);
  const types = new GraphBuilder('bad-types');
  const a = types.input('a', 'float32', [2]);
  const i = types.input('i', 'int64', [2]);
  types.output(types.op('Add', [a, i]), 'y', 'float32', [2]);
  assert.throws(() => checkModel(types.toBytes()), /onnx checker failed:[\s\S]*inconsistent type/);
  // full_check runs shape inference, so a wrongly declared output shape is caught too.
  const dims = new GraphBuilder('bad-dims');
  dims.output(dims.op('Relu', [dims.input('a', 'float32', [2, 3])]), 'y', 'float32', [3, 2]);
  assert.throws(() => checkModel(dims.toBytes()), /onnx checker failed:[\s\S]*differ in dimension 0/);
});
