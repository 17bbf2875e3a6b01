import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeModel } from '../core/onnx/proto.ts';
import { constantsGraph, withMaterialisedConstants, type ConstantValue } from '../core/onnx/materialise-constants.ts';
import { withFoldedConstants } from '../core/runtime/ort-node.ts';
import { convertPrecision } from '../export/precision.ts';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { decoderStepLogProbs } from './helpers/decoder-step.ts';
import { runOrtWeb } from './helpers/onnx-check.ts';

function opsOf(bytes: Uint8Array): string[] {
  return (decodeModel(bytes) as { graph: { node: Array<{ op_type: string }> } }).graph.node.map((n) => n.op_type);
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
    const [a, b] = [await decoderStepLogProbs(encoder, decoder), await decoderStepLogProbs(encoder, materialised)];
    assert.deepEqual(b, a);
    // onnxruntime-node's sessions (createNodeSession) fold the same values the same way, before session creation.
    const folded = await withFoldedConstants(decoder);
    assert.ok(!opsOf(folded).includes('BitwiseXor'), 'the node sessions open the folded graph');
    assert.deepEqual(await decoderStepLogProbs(encoder, folded), a);
    assert.throws(() => withMaterialisedConstants(decoder, {}), /no value for/);
  });
}

test('a graph with nothing computed from initializers alone has no constants graph', async () => {
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
  assert.equal(await withFoldedConstants(decoder), decoder);
});

test('withFoldedConstants hands bytes that are not a model back unchanged, for onnxruntime to report', async () => {
  const junk = new Uint8Array([1, 2, 3, 250, 251]);
  assert.equal(await withFoldedConstants(junk), junk);
});
