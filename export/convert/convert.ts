/**
 * The converter's driver: walks a LayersModel's layer calls in dependency
 * order, hands each to its registered handler, and declares the graph's
 * inputs and outputs. Isomorphic (no Node APIs): it takes the model in
 * memory; `model-files.ts` reads one from disk.
 *
 * Refusals are collected, not thrown one by one: a layer whose class has no
 * handler, or whose handler throws UnsupportedLayerError, is recorded, the
 * layers fed by it are skipped (they are not at fault), and the walk goes on.
 * At the end one UnsupportedLayersError lists every offender.
 */
import { DEFAULT_OPSET, GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { DType, Dim } from '../../core/onnx/types.ts';
import { UnsupportedLayerError, UnsupportedLayersError, type UnsupportedLayer } from './errors.ts';
import { LayerConfig } from './layer-config.ts';
import './layers/index.ts';
import { parseTopology, type LayersModelArtifacts, type LayerSpec, type Shape, type TensorRef } from './model-json.ts';
import { layerConverter, type LayerContext, type Value } from './registry.ts';
import type { Array32 } from './weight-layout.ts';
import { decodeWeights, LayerWeights, type Weight } from './weights.ts';

/** Options of {@link convertLayersModel}. */
export interface ConvertOptions {
  /** Opset of the default ONNX domain, 13 to 21 (default 18). */
  opset?: number;
  /** Batch dimension of inputs and outputs: 'dynamic' (a symbolic 'batch' dim, the default) or a fixed size. */
  batch?: 'dynamic' | number;
  /** Graph name (default: the model's name). */
  name?: string;
}

/** An input or output of the converted graph. */
export interface GraphPort {
  name: string;
  dtype: DType;
  dims: Dim[];
}

/** A converted model. */
export interface ConvertResult {
  /** The serialised ONNX ModelProto. */
  bytes: Uint8Array;
  /** Layer calls converted (InputLayers not counted). */
  layers: number;
  /** ONNX nodes in the graph. */
  ops: number;
  /** Graph inputs, in the model's input order. */
  inputs: GraphPort[];
  /** Graph outputs, in the model's output order. */
  outputs: GraphPort[];
}

const MIN_OPSET = 13;
const MAX_OPSET = 21;

const INPUT_DTYPES: Record<string, DType> = { float32: 'float32', int32: 'int32', bool: 'bool' };

const callKey = (layer: string, node: number): string => `${layer}\u0000${node}`;
const refKey = (r: TensorRef): string => `${callKey(r.layer, r.node)}\u0000${r.tensor}`;

/** A scope segment for a layer name (GraphBuilder scopes are one path segment each). */
const scopeName = (name: string): string => name.replace(/\//g, '_') || 'layer';

/** Builds the ONNX dims of a tfjs shape: dim 0 is the batch; other unknown dims get symbolic names. */
function onnxDims(shape: Shape, batch: 'dynamic' | number, prefix: string): Dim[] {
  return shape.map((d, i) => {
    if (d !== null) return d;
    if (i === 0) return batch === 'dynamic' ? 'batch' : batch;
    return `${prefix}_dim${i}`;
  });
}

/** Known-size tfjs shape of an input, with the batch fixed when asked. */
function inputShape(shape: Shape, batch: 'dynamic' | number): Shape {
  return shape.map((d, i) => (i === 0 && batch !== 'dynamic' ? batch : d));
}

/** The per-model state shared by every layer call. */
class Conversion {
  readonly g: GraphBuilder;
  readonly values = new Map<string, Value>();
  /** Layer calls refused or skipped, by `<layer>\0<node>`: their outputs do not exist. */
  readonly failed = new Set<string>();
  readonly refused: UnsupportedLayer[] = [];
  /** Initializers already stored, by `<scope path>/<key>`, so shared layers reuse them. */
  private readonly params = new Map<string, string>();
  calls = 0;

  constructor(
    readonly weights: Map<string, Weight>,
    opts: { name: string; opset: number },
  ) {
    this.g = new GraphBuilder(opts.name, { opset: opts.opset, producerVersion: 'frost convert' });
  }

  refuse(layer: LayerSpec, reason: string): void {
    if (!this.refused.some((r) => r.name === layer.name && r.reason === reason)) {
      this.refused.push({ name: layer.name, className: layer.className, reason });
    }
  }

  /** Runs the handler of `className` in scope `path`, which must already be the builder's scope. */
  run(
    path: string,
    name: string,
    spec: { className: string; config: Record<string, unknown> },
    inputs: Value[],
    weights: LayerWeights,
  ): Value[] {
    const convert = layerConverter(spec.className);
    if (convert === undefined) throw new UnsupportedLayerError(`no converter for layer class '${spec.className}'`);
    const ctx: LayerContext = {
      g: this.g,
      name,
      className: spec.className,
      config: new LayerConfig(spec.config, name),
      inputs,
      weights,
      input: () => {
        if (inputs.length !== 1) throw new UnsupportedLayerError(`takes 1 input, this call has ${inputs.length}`);
        return inputs[0]!;
      },
      param: (key: string, x: Array32) => {
        const memo = `${path}/${key}`;
        let stored = this.params.get(memo);
        if (stored === undefined) {
          stored = this.g.initializer(key, { dtype: 'float32', dims: x.shape, data: x.data });
          this.params.set(memo, stored);
        }
        return stored;
      },
      convertInner: (inner, innerInputs, innerWeights) => {
        const innerName = typeof inner.config.name === 'string' ? inner.config.name : inner.className;
        const segment = scopeName(innerName);
        return this.g.scope(segment, () => this.run(`${path}/${segment}`, innerName, inner, innerInputs, innerWeights));
      },
    };
    return convert(ctx);
  }
}

/**
 * Runs every call of every layer through its handler, recording outputs in
 * `conv.values` and refusals in `conv.refused` (see the module doc).
 */
function runLayerCalls(conv: Conversion, layers: LayerSpec[]): void {
  const { g } = conv;
  // Every layer class is checked up front, so a missing handler is reported even behind another refusal.
  for (const layer of layers) {
    if (layerConverter(layer.className) === undefined)
      conv.refuse(layer, `no converter for layer class '${layer.className}'`);
  }

  // Keras lists layers in topological order, but a shared layer's later calls may follow layers
  // listed after it; so calls are run as soon as their inputs exist, until none is left.
  let pending = layers.flatMap((layer) => layer.inbound.map((refs, node) => ({ layer, node, refs })));
  while (pending.length > 0) {
    const waiting: typeof pending = [];
    for (const call of pending) {
      const { layer, node } = call;
      const self = callKey(layer.name, node);
      if (call.refs.some((r) => conv.failed.has(callKey(r.layer, r.node)))) {
        conv.failed.add(self);
        continue;
      }
      const ins = call.refs.map((r) => conv.values.get(refKey(r)));
      if (ins.some((v) => v === undefined)) {
        waiting.push(call);
        continue;
      }
      if (layerConverter(layer.className) === undefined) {
        conv.failed.add(self);
        continue;
      }
      try {
        const segment = scopeName(layer.name);
        const weights = new LayerWeights(conv.weights, [`${layer.name}/`]);
        const outs = g.scope(segment, () => conv.run(segment, layer.name, layer, ins as Value[], weights));
        outs.forEach((v, tensor) => conv.values.set(refKey({ layer: layer.name, node, tensor }), v));
        conv.calls += 1;
      } catch (err) {
        if (!(err instanceof UnsupportedLayerError)) {
          throw new Error(`layer '${layer.name}' (${layer.className}): ${(err as Error).message}`, { cause: err });
        }
        conv.refuse(layer, err.message);
        conv.failed.add(self);
      }
    }
    if (waiting.length === pending.length) {
      const stuck = waiting.map((c) => `${c.layer.name}[${c.node}]`).join(', ');
      throw new Error(`model.json: layer calls ${stuck} consume tensors that no layer produces`);
    }
    pending = waiting;
  }
}

/**
 * Converts a TensorFlow.js LayersModel (topology + weights) to an ONNX model.
 * Throws UnsupportedLayersError listing every layer it cannot convert.
 */
export function convertLayersModel(artifacts: LayersModelArtifacts, opts: ConvertOptions = {}): ConvertResult {
  const opset = opts.opset ?? DEFAULT_OPSET;
  if (!Number.isInteger(opset) || opset < MIN_OPSET || opset > MAX_OPSET) {
    throw new Error(`opset ${opts.opset} is not supported (use ${MIN_OPSET} to ${MAX_OPSET})`);
  }
  const batch = opts.batch ?? 'dynamic';
  if (batch !== 'dynamic' && !(Number.isInteger(batch) && batch > 0))
    throw new Error(`batch must be 'dynamic' or a positive integer, got ${batch}`);
  const graph = parseTopology(artifacts.modelTopology);
  const conv = new Conversion(decodeWeights(artifacts.weightSpecs, artifacts.weightData), {
    name: opts.name ?? graph.name,
    opset,
  });
  const { g } = conv;

  const inputs: GraphPort[] = graph.inputs.map((input) => {
    const dtype = INPUT_DTYPES[input.dtype];
    if (dtype === undefined) throw new Error(`input '${input.name}': dtype ${input.dtype} is not supported`);
    const dims = onnxDims(input.shape, batch, input.name);
    g.input(input.name, dtype, dims);
    conv.values.set(refKey({ layer: input.name, node: 0, tensor: 0 }), {
      name: input.name,
      shape: inputShape(input.shape, batch),
      dtype,
    });
    return { name: input.name, dtype, dims };
  });

  runLayerCalls(conv, graph.layers);
  if (conv.refused.length > 0) throw new UnsupportedLayersError(conv.refused);

  const used = new Set(inputs.map((i) => i.name));
  const outputs: GraphPort[] = graph.outputs.map((ref) => {
    const value = conv.values.get(refKey(ref));
    if (value === undefined) throw new Error(`model output ${ref.layer}[${ref.node}][${ref.tensor}] was not produced`);
    let name = ref.layer + (ref.node > 0 ? `_${ref.node}` : '') + (ref.tensor > 0 ? `:${ref.tensor}` : '');
    for (let i = 1; used.has(name); i++) name = `${ref.layer}_out${i}`;
    used.add(name);
    const dims = onnxDims(value.shape, batch, name);
    g.output(value.name, name, value.dtype, dims);
    return { name, dtype: value.dtype, dims };
  });

  const bytes = g.toBytes({ docString: `converted by frost from the tfjs LayersModel '${graph.name}'` });
  return { bytes, layers: conv.calls, ops: g.toGraphProto().node.length, inputs, outputs };
}
