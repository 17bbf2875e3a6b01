/**
 * Node-only test harness for exported ONNX models:
 *  - checkModel: ONNX's own Python checker (`onnx.checker.check_model`,
 *    full_check, which also runs strict shape inference);
 *  - runOrt / runOrtWeb: run the model in onnxruntime-node and in
 *    onnxruntime-web (WebAssembly, as in the browser).
 *
 * About the checker's opset: Debian's python3-onnx is 1.12, which knows
 * opsets up to 17 only; frost writes opset 18. For a model newer than the
 * installed onnx, checkModel checks a *lowered copy* at the newest opset onnx
 * knows: Reduce* ops whose axes come from a constant input get them back as
 * the pre-18 attribute, Split's num_outputs is dropped, and the ops new in
 * opset 18 that onnx does not know (BitwiseXor, ...) are moved to a private
 * domain so the checker skips them (any other unknown op still fails). Everything else (graph structure, SSA, types and
 * shapes of the other ops) is checked as usual, and the report lists what was
 * lowered or left unchecked so tests can assert it. onnxruntime validates the
 * real opset-18 model when it loads it, which covers the rest.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ort } from '../../core/runtime/ort-node.ts';
import type { DType } from '../../core/onnx/types.ts';
import { importOrtWebInNode } from '../../core/runtime/ort-web.ts';

/** What checkModel checked. */
export interface CheckReport {
  /** Version of the Python onnx package used. */
  onnx: string;
  /** Default-domain opset the model declares. */
  modelOpset: number;
  /** Opset the checker ran at (lower than modelOpset when the model was lowered). */
  checkedOpset: number;
  /** Nodes rewritten to the older form, as "OpType(node name)". */
  lowered: string[];
  /** Nodes the checker could not know and skipped, as "OpType(node name)". */
  unchecked: string[];
}

/** The checker: checks the model at sys.argv[1] and prints its CheckReport as JSON (onnx-checker.ts reuses it). */
export const CHECK_SCRIPT = String.raw`
import json, sys
import onnx
from onnx import helper, numpy_helper, defs

path = sys.argv[1]
model = onnx.load(path)
known = defs.onnx_opset_version()
model_opset = max([o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')] or [0])
report = {'onnx': onnx.__version__, 'modelOpset': model_opset, 'checkedOpset': model_opset, 'lowered': [], 'unchecked': []}

REDUCE_18 = {'ReduceMax', 'ReduceMin', 'ReduceMean', 'ReduceProd', 'ReduceL1', 'ReduceL2',
             'ReduceLogSum', 'ReduceLogSumExp', 'ReduceSumSquare'}
# Ops that first appear in opset 18: an older onnx cannot check them, so they are skipped
# (and reported). Any other unknown op still fails the check, so typos are caught.
NEW_IN_18 = {'BitwiseAnd', 'BitwiseOr', 'BitwiseXor', 'BitwiseNot', 'CenterCropPad', 'Col2Im',
             'GroupNormalization', 'Mish'}
SKIP_DOMAIN = 'frost.unchecked'

def lower(graph, consts):
    consts = dict(consts)
    for t in graph.initializer:
        consts[t.name] = numpy_helper.to_array(t)
    for node in graph.node:
        label = '%s(%s)' % (node.op_type, node.name)
        if node.domain in ('', 'ai.onnx'):
            if node.op_type == 'Constant':
                for a in node.attribute:
                    if a.name == 'value':
                        consts[node.output[0]] = numpy_helper.to_array(a.t)
            if node.op_type in REDUCE_18 and len(node.input) >= 2:
                axes = node.input[1]
                noop = [a for a in node.attribute if a.name == 'noop_with_empty_axes']
                if (axes == '' or axes in consts) and not (noop and noop[0].i == 1):
                    for a in noop:
                        node.attribute.remove(a)
                    if axes != '':
                        node.attribute.append(helper.make_attribute('axes', [int(v) for v in consts[axes].reshape(-1)]))
                    del node.input[1:]
                    report['lowered'].append(label)
            elif node.op_type == 'Split':
                for a in [a for a in node.attribute if a.name == 'num_outputs']:
                    node.attribute.remove(a)
                    report['lowered'].append(label)
            if node.op_type in NEW_IN_18 and not defs.has(node.op_type):
                node.domain = SKIP_DOMAIN
                report['unchecked'].append(label)
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                lower(a.g, consts)
            for g in a.graphs:
                lower(g, consts)

if model_opset > known:
    report['checkedOpset'] = known
    for o in model.opset_import:
        if o.domain in ('', 'ai.onnx'):
            o.version = known
    lower(model.graph, {})
    if report['unchecked']:
        model.opset_import.append(helper.make_opsetid(SKIP_DOMAIN, 1))

onnx.checker.check_model(model, full_check=True)
print(json.dumps(report))
`;

let python: string | undefined;

/** A Python interpreter that can import onnx ($FROST_PYTHON, then Debian's, then PATH's). */
export function findPython(): string {
  if (python !== undefined) return python;
  const candidates = [process.env.FROST_PYTHON, '/usr/bin/python3', 'python3'].filter((p): p is string => !!p);
  for (const candidate of candidates) {
    // pyenv shims may shadow Debian's python3, which is the one with python3-onnx.
    const probe = spawnSync(candidate, ['-c', 'import onnx'], { encoding: 'utf8' });
    if (probe.status === 0) return (python = candidate);
  }
  throw new Error(`no python with the onnx package (tried ${candidates.join(', ')}); apt-get install python3-onnx`);
}

/**
 * Runs ONNX's checker (full_check: with strict shape inference) on a model,
 * given as bytes or a file path. Throws with Python's stderr if it fails.
 */
export function checkModel(model: Uint8Array | string): CheckReport {
  let dir: string | undefined;
  let path: string;
  if (typeof model === 'string') {
    path = model;
  } else {
    dir = mkdtempSync(join(tmpdir(), 'frost-onnx-check-'));
    path = join(dir, 'model.onnx');
    writeFileSync(path, model);
  }
  try {
    const result = spawnSync(findPython(), ['-c', CHECK_SCRIPT, path], { encoding: 'utf8', maxBuffer: 16 << 20 });
    if (result.error) throw result.error;
    if (result.status !== 0) throw new Error(`onnx checker failed:\n${result.stderr.trim()}`);
    return JSON.parse(result.stdout.trim().split('\n').pop()!) as CheckReport;
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
}

/** Typed arrays that tensors are fed and returned as. */
export type TypedArray =
  | Float32Array
  | Float64Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array;

/** A feed: `dtype` defaults to the typed array's natural one (give it for bool and float16). */
export interface Feed {
  dtype?: DType;
  dims: readonly number[];
  data: TypedArray;
}

/** An output tensor as plain data. */
export interface TensorResult {
  dtype: string;
  dims: number[];
  data: TypedArray;
}

function naturalDType(data: TypedArray): DType {
  if (data instanceof Float32Array) return 'float32';
  if (data instanceof BigInt64Array) return 'int64';
  if (data instanceof Int32Array) return 'int32';
  if (data instanceof Uint32Array) return 'uint32';
  if (data instanceof Int8Array) return 'int8';
  if (data instanceof Uint8Array) return 'uint8';
  if (data instanceof Uint16Array) return 'float16';
  throw new Error(`give a dtype for a ${data.constructor.name} feed`);
}

/** The parts of onnxruntime-node and onnxruntime-web that the runners use (the two share this API). */
interface OrtLike {
  Tensor: new (type: DType, data: TypedArray, dims: readonly number[]) => unknown;
  InferenceSession: {
    create(
      bytes: Uint8Array,
      options?: object,
    ): Promise<{
      run(
        feeds: Record<string, unknown>,
      ): Promise<Record<string, { type: string; dims: readonly number[]; data: unknown }>>;
      release(): Promise<void>;
    }>;
  };
}

/** A session of one model, run as often as needed; release it when done. */
export interface OpenSession {
  run(feeds: Record<string, Feed>): Promise<Record<string, TensorResult>>;
  release(): Promise<void>;
}

async function openWith(runtime: OrtLike, bytes: Uint8Array): Promise<OpenSession> {
  const session = await runtime.InferenceSession.create(bytes, { graphOptimizationLevel: 'all' });
  return {
    async run(feeds) {
      const inputs: Record<string, unknown> = {};
      for (const [name, feed] of Object.entries(feeds)) {
        inputs[name] = new runtime.Tensor(feed.dtype ?? naturalDType(feed.data), feed.data, feed.dims);
      }
      const outputs = await session.run(inputs);
      const result: Record<string, TensorResult> = {};
      for (const [name, t] of Object.entries(outputs)) {
        result[name] = { dtype: t.type, dims: [...t.dims], data: t.data as TypedArray };
      }
      return result;
    },
    release: () => session.release(),
  };
}

async function runWith(
  runtime: OrtLike,
  bytes: Uint8Array,
  feeds: Record<string, Feed>,
): Promise<Record<string, TensorResult>> {
  const session = await openWith(runtime, bytes);
  try {
    return await session.run(feeds);
  } finally {
    await session.release();
  }
}

/** Opens a model in onnxruntime-node (CPU), or in onnxruntime-web (WebAssembly) with `web`, for several runs. */
export async function openOrt(bytes: Uint8Array, web = false): Promise<OpenSession> {
  return openWith(web ? await loadOrtWeb() : (ort as unknown as OrtLike), bytes);
}

/** Runs a model in onnxruntime-node (CPU) and returns every output. */
export function runOrt(bytes: Uint8Array, feeds: Record<string, Feed>): Promise<Record<string, TensorResult>> {
  return runWith(ort as unknown as OrtLike, bytes, feeds);
}

let ortWeb: Promise<OrtLike> | undefined;

/**
 * onnxruntime-web in Node. Its package.json maps the `node` import condition
 * to dist/ort.node.min.mjs, which loads the .wasm from its own dist folder
 * (no wasmPaths needed). One thread: the multi-threaded build would start
 * worker threads, which a test process does not need.
 */
function loadOrtWeb(): Promise<OrtLike> {
  ortWeb ??= importOrtWebInNode().then((web) => {
    web.env.wasm.numThreads = 1;
    return web as unknown as OrtLike;
  });
  return ortWeb;
}

/** Runs a model in onnxruntime-web (WebAssembly CPU backend) and returns every output. */
export async function runOrtWeb(bytes: Uint8Array, feeds: Record<string, Feed>): Promise<Record<string, TensorResult>> {
  return runWith(await loadOrtWeb(), bytes, feeds);
}
