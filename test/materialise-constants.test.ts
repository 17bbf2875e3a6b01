import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { decodeModel } from '../core/onnx/proto.ts';
import { constantsGraph, withMaterialisedConstants, type ConstantValue } from '../core/onnx/materialise-constants.ts';
import { convertPrecision } from '../export/precision.ts';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { runOrtWeb } from './helpers/onnx-check.ts';

function opsOf(bytes: Uint8Array): string[] {
  return (decodeModel(bytes) as { graph: { node: Array<{ op_type: string }> } }).graph.node.map((n) => n.op_type);
}

async function decoderLogProbs(encoder: Uint8Array, decoder: Uint8Array): Promise<Float32Array> {
  const e = await ort.InferenceSession.create(encoder);
  const d = await ort.InferenceSession.create(decoder);
  const src = BigInt64Array.from({ length: 10 }, (_, i) => BigInt(4 + ((i * 37) % 290)));
  const m = await e.run({
    src_ids: new ort.Tensor('int64', src, [2, 5]),
    src_lengths: new ort.Tensor('int64', BigInt64Array.from([5n, 3n]), [2]),
  });
  const out = await d.run({
    prev_token: new ort.Tensor('int64', BigInt64Array.from([2n, 17n]), [2]),
    state: m.state!,
    enc_out: m.enc_out!,
    enc_keys: m.enc_keys!,
    src_mask: m.src_mask!,
  });
  return out.log_probs!.data as Float32Array;
}

for (const precision of ['fp32', 'int8-compute'] as const) {
  test(`fixed-l2 (${precision}): the regenerated matrix, computed once by onnxruntime-web and stored, gives the same log-probs bit for bit`, async () => {
    const model = buildModel(
      'rnn-attn',
      resolveArchConfig('rnn-attn', 'tiny'),
      { srcVocab: 300, tgtVocab: 300 },
      { name: 'fixed-l2', options: {} },
      3,
    );
    const graphs = model.toOnnx();
    model.params.dispose();
    const encoder = convertPrecision(graphs.encoder.toBytes(), precision).bytes;
    const decoder = convertPrecision(graphs.decoder.toBytes(), precision).bytes;
    const split = constantsGraph(decoder);
    assert.ok(split, 'the seeded head has a constants graph');
    assert.ok(opsOf(split.bytes).includes('BitwiseXor'));
    // The page computes them with onnxruntime-web, as the browser client does.
    const computed = await runOrtWeb(split.bytes, {});
    const values: Record<string, ConstantValue> = {};
    for (const name of split.outputs) {
      const t = computed[name]!;
      values[name] = { type: t.dtype, dims: t.dims, data: t.data as ArrayBufferView };
    }
    const materialised = withMaterialisedConstants(decoder, values);
    assert.ok(!opsOf(materialised).includes('BitwiseXor'), 'the generator nodes are gone');
    assert.equal(constantsGraph(materialised), null);
    const [a, b] = [await decoderLogProbs(encoder, decoder), await decoderLogProbs(encoder, materialised)];
    assert.deepEqual(b, a);
    assert.throws(() => withMaterialisedConstants(decoder, {}), /no value for/);
  });
}

test('a graph with nothing computed from initializers alone has no constants graph', () => {
  const model = buildModel(
    'rnn-attn',
    resolveArchConfig('rnn-attn', 'tiny'),
    { srcVocab: 300, tgtVocab: 300 },
    { name: 'learned', options: {} },
    3,
  );
  const graphs = model.toOnnx();
  model.params.dispose();
  const decoder = graphs.decoder.toBytes();
  assert.equal(constantsGraph(decoder), null);
  assert.equal(withMaterialisedConstants(decoder, {}), decoder);
});
