import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ort } from '../core/runtime/ort-node.ts';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import type { ExportResult } from '../export/export-run.ts';
import { readGraphInfo } from '../export/inspect-graph.ts';
import { dequantizeRows, INT8_MAX, quantizeRowsInt8 } from '../export/precision-quantize.ts';
import { gatheredTables } from '../core/onnx/gathered-rows.ts';
import { INT8_COMPUTE_WEIGHT_MAX, quantizeColumnsInt8 } from '../export/precision-int8-compute.ts';
import { convertPrecision, weightNameOf } from '../export/precision.ts';
import { decodeModel } from '../core/onnx/proto.ts';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { decoderStepLogProbs } from './helpers/decoder-step.ts';
import { runOrtWeb } from './helpers/onnx-check.ts';
import { startOnnxChecker, type OnnxChecker } from './helpers/onnx-checker.ts';
import { cachedToyExport } from './helpers/toy-exports.ts';
import { toyTestBleu } from './helpers/toy-run.ts';
import { RNN_ATTN_LEARNED } from './helpers/toy-specs.ts';

let dataDir: string;
/** One Python checker for the file's models: a Python start per model cost more than the check. */
let checker: OnnxChecker;
/**
 * One trained toy run (shared with translation-e2e.test.ts), exported once per precision; every end-to-end test
 * below reads these. Both are cached per content hash of the code that makes them (cached-fixture.ts).
 */
const exports: Partial<Record<'fp32' | 'fp16' | 'int8' | 'int8-compute', ExportResult>> = {};

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  checker = await startOnnxChecker();
  // fp32 with frost export's defaults, as translation-e2e.test.ts exports it: one build serves both.
  const fp32 = await cachedToyExport(RNN_ATTN_LEARNED);
  dataDir = fp32.dataDir;
  exports.fp32 = fp32;
  for (const precision of ['fp16', 'int8', 'int8-compute'] as const) {
    exports[precision] = await cachedToyExport(RNN_ATTN_LEARNED, { precision });
  }
});

after(() => checker.close());

const testBleu = (modelDir: string) => toyTestBleu(modelDir, dataDir);

/** Initializer payload bytes of both graph files of an export. */
function weightBytes(result: ExportResult): number {
  return Object.values(result.card.size!.components).reduce((a, b) => a + b, 0);
}

describe('per-row int8 quantisation', () => {
  test('each value is within half a step of its row scale, the row maximum maps to ±127, and a zero row stays exact', () => {
    const data = Float32Array.from([0.5, -1, 0.25, 0.001, 0, 0, 0, 0, 100, -3, 7, 0.02]);
    const { q, scales } = quantizeRowsInt8(data, 3, 4);
    assert.deepEqual(Array.from(scales), [Math.fround(1 / INT8_MAX), 1, Math.fround(100 / INT8_MAX)]);
    assert.equal(q[1], -INT8_MAX);
    assert.equal(q[8], INT8_MAX);
    const back = dequantizeRows({ q, scales }, 4);
    data.forEach((v, i) =>
      assert.ok(Math.abs(back[i]! - v) <= scales[Math.floor(i / 4)]! / 2 + 1e-7, `element ${i}: ${back[i]} vs ${v}`),
    );
    assert.deepEqual(Array.from(back.subarray(4, 8)), [0, 0, 0, 0]);
    assert.throws(() => quantizeRowsInt8(Float32Array.from([1, NaN]), 1, 2), /non-finite/);
  });
});

describe('convertPrecision (a pass over the serialized model)', () => {
  let fp32: { encoder: Uint8Array; decoder: Uint8Array };
  before(() => {
    // Untrained, tied head: the target embedding is read by the Gather and by the head's Gemm.
    const model = buildModel(
      'rnn-attn',
      resolveArchConfig('rnn-attn', 'tiny'),
      { srcVocab: 300, tgtVocab: 300 },
      { name: 'tied', options: {} },
      3,
    );
    const graphs = model.toOnnx();
    fp32 = { encoder: graphs.encoder.toBytes(), decoder: graphs.decoder.toBytes() };
    model.params.dispose();
  });

  const feeds = () => {
    const B = 2;
    const S = 5;
    return {
      encoder: {
        src_ids: new ort.Tensor(
          'int64',
          BigInt64Array.from({ length: B * S }, (_, i) => BigInt(4 + ((i * 37) % 290))),
          [B, S],
        ),
        src_lengths: new ort.Tensor('int64', BigInt64Array.from([5n, 3n]), [B]),
      },
      token: new ort.Tensor('int64', BigInt64Array.from([2n, 17n]), [B]),
    };
  };

  async function logProbs(bytes: { encoder: Uint8Array; decoder: Uint8Array }): Promise<Float32Array> {
    const encoder = await ort.InferenceSession.create(bytes.encoder);
    const decoder = await ort.InferenceSession.create(bytes.decoder);
    const f = feeds();
    const enc = await encoder.run(f.encoder);
    const out = await decoder.run({
      prev_token: f.token,
      state: enc.state!,
      enc_out: enc.enc_out!,
      enc_keys: enc.enc_keys!,
      src_mask: enc.src_mask!,
    });
    await encoder.release();
    await decoder.release();
    return out.log_probs!.data as Float32Array;
  }

  async function logProbsWeb(bytes: { encoder: Uint8Array; decoder: Uint8Array }): Promise<Float32Array> {
    const f = feeds();
    const feed = (t: ort.Tensor) => ({ dims: t.dims, data: t.data as BigInt64Array | Float32Array });
    const enc = await runOrtWeb(bytes.encoder, {
      src_ids: feed(f.encoder.src_ids),
      src_lengths: feed(f.encoder.src_lengths),
    });
    const memory = Object.fromEntries(
      ['state', 'enc_out', 'enc_keys', 'src_mask'].map((n) => [n, { dims: enc[n]!.dims, data: enc[n]!.data }]),
    );
    const out = await runOrtWeb(bytes.decoder, { prev_token: feed(f.token), ...memory });
    return out.log_probs!.data as Float32Array;
  }

  test('fp32 is the identity; a weight beyond fp16 range is refused by name', () => {
    assert.equal(convertPrecision(fp32.decoder, 'fp32').bytes, fp32.decoder);
    const g = new GraphBuilder('big');
    const x = g.input('x', 'float32', [1, 32]);
    const big = new Float32Array(32 * 32).fill(0.5);
    big[7] = 1e6;
    g.output(
      g.op('MatMul', [x, g.initializer('layer/W', { dtype: 'float32', dims: [32, 32], data: big })]),
      'y',
      'float32',
      [1, 32],
    );
    assert.throws(() => convertPrecision(g.toBytes(), 'fp16'), /'layer\/W' holds values beyond fp16's range/);
    assert.equal(convertPrecision(g.toBytes(), 'int8').converted.length, 1);
  });

  for (const [precision, tolerance, storedType] of [
    ['fp16', 2e-2, 'float16'],
    ['int8', 0.2, 'int8'],
  ] as const) {
    test(`${precision}: same interface, large weights stored as ${storedType}, ONNX-checked, log-probs close to fp32`, async () => {
      const enc = convertPrecision(fp32.encoder, precision);
      const dec = convertPrecision(fp32.decoder, precision);
      // The weight matrices, and only those: GRU's B [dirs, 6H] and the other biases stay float32.
      const expected = {
        encoder: ['encoder/embedding', 'encoder/gru/W', 'encoder/gru/R', 'decoder/init/W', 'decoder/attention/Ua'],
        decoder: [
          'decoder/embedding',
          'decoder/attention/Wa',
          'decoder/gru/Wx',
          'decoder/gru/Wh',
          'decoder/out/W',
          'head/P',
        ],
      };
      for (const [role, before, after] of [
        ['encoder', fp32.encoder, enc],
        ['decoder', fp32.decoder, dec],
      ] as const) {
        const a = readGraphInfo(before);
        const b = readGraphInfo(after.bytes);
        assert.deepEqual(b.inputs, a.inputs);
        assert.deepEqual(b.outputs, a.outputs);
        assert.deepEqual(after.converted.map((c) => c.name).sort(), [...expected[role]].sort());
        for (const t of b.initializers) {
          const stored = t.name !== weightNameOf(t.name);
          if (!stored) assert.ok(!expected[role].includes(t.name), `${t.name} is still in the graph as float32`);
          else if (!t.name.endsWith('.scale') && !t.name.endsWith('.shape'))
            assert.equal(t.elemType, storedType, t.name);
        }
        assert.ok(after.bytes.length < before.length);
        // The source embedding is still sized through its conversion, for the card check at load (card-checks.ts).
        if (role === 'encoder') {
          const rows = gatheredTables(before, 'src_ids').map((t) => t.rows);
          assert.equal(rows.length, 1);
          assert.deepEqual(
            gatheredTables(after.bytes, 'src_ids').map((t) => t.rows),
            rows,
          );
        }
        const report = await checker.check(after.bytes);
        assert.deepEqual(report.unchecked, []);
      }
      // The tied embedding is stored once and still feeds both the Gather and the head.
      assert.equal(dec.converted.filter((c) => c.name === 'decoder/embedding').length, 1);
      const reference = await logProbs(fp32);
      const actual = await logProbs({ encoder: enc.bytes, decoder: dec.bytes });
      let maxDiff = 0;
      reference.forEach((v, i) => (maxDiff = Math.max(maxDiff, Math.abs(v - actual[i]!))));
      assert.ok(maxDiff < tolerance, `max |Δ log p| ${maxDiff}`);
      assert.ok(maxDiff > 0, 'the weights were not changed at all');

      // The browser runtime (onnxruntime-web) runs the same converted graphs to the same numbers.
      const web = await logProbsWeb({ encoder: enc.bytes, decoder: dec.bytes });
      web.forEach((v, i) => assert.ok(Math.abs(v - actual[i]!) < 1e-4, `web vs node at ${i}: ${v} vs ${actual[i]}`));
    });
  }

  test('int8-compute, tied head: one int8 copy of the shared matrix, gathered by rows and the head Gemm on integers', async () => {
    const enc = convertPrecision(fp32.encoder, 'int8-compute');
    const dec = convertPrecision(fp32.decoder, 'int8-compute');
    assert.equal(dec.converted.filter((c) => c.name === 'decoder/embedding').length, 1);
    const nodes = nodesOf(dec.bytes);
    // The head's product reads the stored rows transposed (folded by onnxruntime at session creation)...
    assert.ok(
      nodes.some((n) => n.op === 'MatMulInteger' && n.inputs[1] === 'decoder/embedding.T.int8'),
      nodes.map((n) => `${n.op}(${n.inputs.join(',')})`).join(' '),
    );
    assert.ok(nodes.some((n) => n.op === 'Transpose' && n.inputs[0] === 'decoder/embedding.int8'));
    // ...and the embedding's Gather reads the same int8 rows: no float copy of the matrix is stored.
    assert.ok(nodes.some((n) => n.op === 'Gather' && n.inputs[0] === 'decoder/embedding.int8'));
    const stored = readGraphInfo(dec.bytes).initializers.filter((t) => t.name.startsWith('decoder/embedding'));
    assert.deepEqual(stored.map((t) => `${t.name} ${t.elemType}`).sort(), [
      'decoder/embedding.int8 int8',
      'decoder/embedding.row_scale float32',
      'decoder/embedding.scale float32',
    ]);
    assert.deepEqual((await checker.check(dec.bytes)).unchecked, []);
    const reference = await logProbs(fp32);
    const actual = await logProbs({ encoder: enc.bytes, decoder: dec.bytes });
    let maxDiff = 0;
    reference.forEach((v, i) => (maxDiff = Math.max(maxDiff, Math.abs(v - actual[i]!))));
    assert.ok(maxDiff < 0.2 && maxDiff > 0, `max |Δ log p| ${maxDiff}`);
    const web = await logProbsWeb({ encoder: enc.bytes, decoder: dec.bytes });
    web.forEach((v, i) => assert.ok(Math.abs(v - actual[i]!) < 1e-4, `web vs node at ${i}: ${v} vs ${actual[i]}`));
  });
});

/** Node op types of a serialized model's main graph, and which initializer each node reads as input 1. */
function nodesOf(bytes: Uint8Array): Array<{ op: string; inputs: string[] }> {
  const model = decodeModel(bytes) as { graph: { node: Array<{ op_type: string; input: string[] }> } };
  return model.graph.node.map((n) => ({ op: n.op_type, inputs: n.input }));
}

describe('int8-compute (integer MatMul/Gemm kernels)', () => {
  test('per-column 7-bit int8: each value within half a step of its column scale, the column maximum maps to ±63', () => {
    const K = 5;
    const N = 3;
    const w = Float32Array.from({ length: K * N }, (_, i) => Math.sin(i * 1.7) * (1 + (i % N) * 10));
    const { q, scales } = quantizeColumnsInt8(w, K, N);
    for (let n = 0; n < N; n++) {
      let max = 0;
      for (let k = 0; k < K; k++) max = Math.max(max, Math.abs(q[k * N + n]!));
      // 255 · 63 · 2 < 2^15: the uint8 × int8 pair sums of a non-VNNI x86 kernel (VPMADDUBSW) cannot saturate.
      assert.equal(max, INT8_COMPUTE_WEIGHT_MAX);
      assert.ok(255 * max * 2 <= 32767);
    }
    w.forEach((v, i) => assert.ok(Math.abs(q[i]! * scales[i % N]! - v) <= scales[i % N]! / 2 + 1e-6, `value ${i}`));
  });

  test('rnn-attn: the MatMul/Gemm weights become MatMulInteger, the rest weight-only int8; log-probs close to fp32', async () => {
    const model = buildModel(
      'rnn-attn',
      resolveArchConfig('rnn-attn', 'tiny'),
      { srcVocab: 300, tgtVocab: 300 },
      { name: 'learned', options: {} },
      3,
    );
    const graphs = model.toOnnx();
    const fp32 = { encoder: graphs.encoder.toBytes(), decoder: graphs.decoder.toBytes() };
    model.params.dispose();
    const enc = convertPrecision(fp32.encoder, 'int8-compute');
    const dec = convertPrecision(fp32.decoder, 'int8-compute');
    assert.deepEqual(
      gatheredTables(enc.bytes, 'src_ids').map((t) => t.rows),
      gatheredTables(fp32.encoder, 'src_ids').map((t) => t.rows),
    );
    const integerWeights = (bytes: Uint8Array) =>
      nodesOf(bytes)
        .filter((n) => n.op === 'MatMulInteger')
        .map((n) => weightNameOf(n.inputs[1]!.replace(/\.T\.int8$/, '.int8')))
        .sort();
    assert.deepEqual(
      integerWeights(dec.bytes),
      ['decoder/attention/Wa', 'decoder/gru/Wh', 'decoder/gru/Wx', 'decoder/out/W', 'head/W'].sort(),
    );
    assert.deepEqual(integerWeights(enc.bytes), ['decoder/attention/Ua', 'decoder/init/W'].sort());
    // What no MatMul reads alone (embeddings' Gather, the encoder's GRU node) is still stored int8.
    assert.deepEqual(
      enc.converted.map((c) => c.name).sort(),
      ['decoder/attention/Ua', 'decoder/init/W', 'encoder/embedding', 'encoder/gru/R', 'encoder/gru/W'].sort(),
    );
    for (const bytes of [enc.bytes, dec.bytes]) {
      assert.deepEqual((await checker.check(bytes)).unchecked, []);
      // Float MatMuls left multiply activations (attention) or small vectors (attention's v [att, 1]).
      const floatMatrices = new Set(
        readGraphInfo(bytes)
          .initializers.filter(
            (t) => t.elemType === 'float32' && t.dims.length === 2 && t.dims[0]! >= 16 && t.dims[1]! >= 16,
          )
          .map((t) => t.name),
      );
      assert.deepEqual([...floatMatrices], []);
      const floatProducts = nodesOf(bytes).filter((n) => n.op === 'MatMul' || n.op === 'Gemm');
      assert.ok(floatProducts.length <= 2, floatProducts.map((n) => n.inputs.join(' x ')).join('; '));
    }
    const reference = await decoderStepLogProbs(fp32.encoder, fp32.decoder);
    const actual = await decoderStepLogProbs(enc.bytes, dec.bytes);
    let maxDiff = 0;
    reference.forEach((v, i) => (maxDiff = Math.max(maxDiff, Math.abs(v - actual[i]!))));
    assert.ok(maxDiff < 0.2 && maxDiff > 0, `max |Δ log p| ${maxDiff}`);
  });

  test('a matrix computed from initializers (a seeded head) is quantised in the graph, transB included', async () => {
    const g = new GraphBuilder('computed');
    const x = g.input('x', 'float32', ['rows', 32]);
    const base = Float32Array.from({ length: 40 * 32 }, (_, i) => Math.cos(i * 0.37));
    // T = 0.5 · base, [V=40, d=32], read transposed as a head reads its target matrix.
    const T = g.op('Mul', [
      g.initializer('head/base', { dtype: 'float32', dims: [40, 32], data: base }),
      g.constFloat(0.5),
    ]);
    g.output(g.op('Gemm', [x, T], { transB: 1 }), 'y', 'float32', ['rows', 40]);
    const fp32 = g.toBytes();
    const out = convertPrecision(fp32, 'int8-compute');
    const ops = nodesOf(out.bytes).map((n) => n.op);
    assert.ok(
      ops.includes('MatMulInteger') && ops.filter((o) => o === 'DynamicQuantizeLinear').length === 2,
      ops.join(','),
    );
    assert.deepEqual((await checker.check(out.bytes)).unchecked, []);
    const feeds = {
      x: new ort.Tensor(
        'float32',
        Float32Array.from({ length: 64 }, (_, i) => Math.sin(i)),
        [2, 32],
      ),
    };
    const runOn = async (bytes: Uint8Array) => (await ort.InferenceSession.create(bytes)).run(feeds);
    const [a, b] = [await runOn(fp32), await runOn(out.bytes)];
    const ya = a.y!.data as Float32Array;
    const yb = b.y!.data as Float32Array;
    ya.forEach((v, i) => assert.ok(Math.abs(v - yb[i]!) < 0.1, `y[${i}]: ${v} vs ${yb[i]}`));
  });
});

describe('frost export --precision on a trained toy model', () => {
  test('fp32 stays the default and records no precision check', () => {
    const r = exports.fp32!;
    assert.equal(r.card.precision, 'fp32');
    assert.equal(r.card.precisionCheck, undefined);
    assert.ok(r.parity.maxScaledDiff <= 1e-4);
  });

  for (const [precision, low, high] of [
    ['fp16', 0.45, 0.55],
    ['int8', 0.22, 0.3],
    ['int8-compute', 0.22, 0.3],
  ] as const) {
    test(`${precision}: loads in onnxruntime-node, passes the ONNX checker, is smaller, and translates within 3 BLEU of fp32`, async () => {
      const r = exports[precision]!;
      const fp32 = exports.fp32!;
      assert.equal(r.card.precision, precision);
      // The float32 graphs still had to pass the strict parity check before conversion.
      assert.ok(r.parity.maxScaledDiff <= 1e-4);
      for (const file of ['encoder.onnx', 'decoder.onnx']) await checker.check(join(r.outDir, file));

      const ratio = weightBytes(r) / weightBytes(fp32);
      assert.ok(ratio > low && ratio < high, `${precision} weights are ${(100 * ratio).toFixed(1)}% of fp32's`);
      const fileBytes = (x: ExportResult) => Object.values(x.card.files).reduce((a, f) => a + f.bytes, 0);
      assert.ok(fileBytes(r) < fileBytes(fp32) * high);

      const check = r.card.precisionCheck!;
      assert.equal(check.precision, precision);
      assert.equal(check.sentences, 200);
      assert.equal(check.bytes, fileBytes(r));
      assert.equal(check.bytesFp32, fileBytes(fp32));
      assert.ok(check.bleuDelta! > -3, `validation BLEU ${check.bleuFp32} -> ${check.bleu}`);
      assert.ok(check.maxAbsLogProbDiff > 0);

      const [bleu, bleuFp32] = [await testBleu(r.outDir), await testBleu(fp32.outDir)];
      assert.ok(bleuFp32 >= 90, `fp32 test BLEU ${bleuFp32}`);
      assert.ok(bleu >= bleuFp32 - 3, `${precision} test BLEU ${bleu.toFixed(2)} vs fp32 ${bleuFp32.toFixed(2)}`);
    });
  }

  test('the card records the size breakdown and session-creation time', () => {
    for (const r of Object.values(exports)) {
      const size = r!.card.size!;
      for (const c of ['embeddings', 'encoder', 'decoder', 'head']) assert.ok(size.components[c]! > 0, c);
      assert.deepEqual(Object.keys(size.byFile).sort(), ['decoder.onnx', 'encoder.onnx']);
      assert.ok(Object.values(size.sessionCreateMs!).every((ms) => ms > 0));
    }
    assert.ok(exports.fp16!.card.size!.dtypes.float16! > 0);
    assert.ok(exports.int8!.card.size!.dtypes.int8! > 0);
    assert.ok(exports['int8-compute']!.card.size!.dtypes.int8! > 0);
  });
});
