import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { decodeModel } from '../core/onnx/proto.ts';
import { parseModelCard } from '../core/runtime/model-card.ts';
import { exportRun, type ExportResult } from '../export/export-run.ts';
import { tritonConfig, tritonModelName } from '../export/triton.ts';
import { formatPbtxt, type PbMessage, type PbValue, parsePbtxt, pbEnum } from '../export/triton-pbtxt.ts';
import { initBackend } from '../train/backend/select.ts';
import { trainToyRun } from './helpers/toy-run.ts';

let dir: string;
let repo: string;
let exported: ExportResult;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-triton-'));
  // A one-epoch run on a small corpus: the repository layout does not depend on model quality.
  const { runDir } = await trainToyRun(dir, {
    corpus: { seed: 3, train: 300, val: 20, test: 20 },
    config: { epochs: 1, optim: { learningRate: 1e-3 } },
  });
  repo = join(dir, 'triton');
  exported = await exportRun(runDir, join(dir, 'model'), {
    name: 'toy en/xx',
    precision: 'fp16',
    triton: repo,
    tritonOptions: { maxBatchSize: 32 },
    quiet: true,
  });
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** ONNX element type codes → Triton data types, written out independently of export/triton.ts. */
const EXPECTED_TYPE: Record<number, string> = {
  1: 'TYPE_FP32',
  7: 'TYPE_INT64',
  10: 'TYPE_FP16',
  6: 'TYPE_INT32',
  9: 'TYPE_BOOL',
};

interface OnnxValue {
  name: string;
  type: { tensor_type: { elem_type: number; shape: { dim?: Array<{ dim_value?: number; dim_param?: string }> } } };
}

function list(v: PbValue | undefined): PbValue[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/** Checks one config entry against the ONNX value it describes, with the batch dim left out. */
function assertMatches(entry: PbMessage, value: OnnxValue, where: string): void {
  assert.equal(entry.name, value.name, where);
  assert.deepEqual(entry.data_type, pbEnum(EXPECTED_TYPE[value.type.tensor_type.elem_type]!), `${where}: data_type`);
  const dims = value.type.tensor_type.shape.dim ?? [];
  assert.ok(dims[0]?.dim_param, `${where}: the ONNX value's first dim is the symbolic batch dim`);
  const rest = dims.slice(1).map((d) => (d.dim_param !== undefined ? -1 : d.dim_value));
  if (rest.length === 0) {
    // [batch] only: declared [1] and reshaped to a per-row scalar.
    assert.deepEqual(entry.dims, [1], `${where}: dims`);
    assert.deepEqual(entry.reshape, { shape: [] }, `${where}: reshape`);
  } else {
    assert.deepEqual(entry.dims, rest, `${where}: dims (rank ${dims.length} minus the batch dim)`);
    assert.equal(entry.reshape, undefined);
  }
}

describe('Triton model repository', () => {
  test('encoder and decoder each get config.pbtxt + 1/model.onnx, and the configs match the graphs', async () => {
    const base = tritonModelName(exported.card.name);
    assert.equal(base, 'toy_en_xx');
    for (const role of ['encoder', 'decoder'] as const) {
      const name: string = `${base}_${role}`;
      const onnxBytes: Uint8Array = await readFile(join(repo, name, '1', 'model.onnx'));
      // The repository serves exactly the exported (here fp16) graph.
      assert.deepEqual(onnxBytes, await readFile(join(exported.outDir, exported.card.graphs[role].file)));
      const config = parsePbtxt(await readFile(join(repo, name, 'config.pbtxt'), 'utf8'));
      assert.equal(config.name, name);
      assert.equal(config.platform, 'onnxruntime_onnx');
      assert.equal(config.max_batch_size, 32);
      assert.deepEqual(config.dynamic_batching, { max_queue_delay_microseconds: 100 });

      const graph = (decodeModel(onnxBytes) as { graph: { input: OnnxValue[]; output: OnnxValue[] } }).graph;
      const inputs = list(config.input) as PbMessage[];
      const outputs = list(config.output) as PbMessage[];
      assert.deepEqual(
        inputs.map((i) => i.name),
        graph.input.map((v) => v.name),
      );
      assert.deepEqual(
        outputs.map((o) => o.name),
        graph.output.map((v) => v.name),
      );
      inputs.forEach((entry, i) => assertMatches(entry, graph.input[i]!, `${name} input ${entry.name}`));
      outputs.forEach((entry, i) => assertMatches(entry, graph.output[i]!, `${name} output ${entry.name}`));
    }
  });

  test('the card names the I/O the configs declare, and the README explains the layout', async () => {
    const base = tritonModelName(exported.card.name);
    const card = parseModelCard(await readFile(join(repo, `${base}.model-card.json`), 'utf8'), 'triton card');
    assert.equal(card.precision, 'fp16');
    const decoder = parsePbtxt(await readFile(join(repo, `${base}_decoder`, 'config.pbtxt'), 'utf8'));
    const names = list(decoder.input).map((i) => (i as PbMessage).name);
    assert.deepEqual(
      [...names].sort(),
      [card.graphs.decoder.token, ...card.graphs.decoder.state, ...card.graphs.decoder.memory].sort(),
    );
    const readme = await readFile(join(repo, 'README.md'), 'utf8');
    for (const phrase of [`${base}_encoder`, `${base}_decoder`, 'client-side', 'core/decode', 'next_<state>'])
      assert.ok(readme.includes(phrase), phrase);
    assert.ok(
      !existsSync(join(repo, 'model-card.json')),
      'top-level files are named after the model, so several models can share a repository',
    );
  });

  test('a graph without a shared symbolic first dim is configured without batching', () => {
    const g = new GraphBuilder('fixed');
    const x = g.input('x', 'float32', [3, 'n']);
    g.output(g.op('Relu', [x]), 'y', 'float32', [3, 'n']);
    const config = tritonConfig('fixed', g.toBytes());
    assert.equal(config.max_batch_size, 0);
    assert.equal(config.dynamic_batching, undefined);
    assert.deepEqual((config.input as PbMessage[])[0]!.dims, [3, -1]);
  });
});

describe('pbtxt subset', () => {
  test('what formatPbtxt writes, parsePbtxt reads back', () => {
    const msg: PbMessage = {
      name: 'm "quoted"',
      max_batch_size: 8,
      flag: true,
      input: [
        { name: 'a', data_type: pbEnum('TYPE_FP32'), dims: [-1, 4] },
        { name: 'b', data_type: pbEnum('TYPE_INT64'), dims: [1], reshape: { shape: [] } },
      ],
      dynamic_batching: { max_queue_delay_microseconds: 100 },
    };
    assert.deepEqual(parsePbtxt(formatPbtxt(msg)), msg);
  });

  test('hand-written forms: repeated fields, comments, colon before a message', () => {
    const parsed = parsePbtxt(
      '# comment\nname: "x"\ninput { name: "a" dims: [ 2 ] }\ninput { name: "b" }\nreshape: { shape: [ ] }\n',
    );
    assert.deepEqual(parsed, { name: 'x', input: [{ name: 'a', dims: [2] }, { name: 'b' }], reshape: { shape: [] } });
    assert.throws(() => parsePbtxt('name: "x'), /unterminated/);
    assert.throws(() => parsePbtxt('input [ { name: "a" }'), /expected/);
  });
});
