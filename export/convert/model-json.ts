/**
 * The TensorFlow.js LayersModel format (`model.json` + weight shards), as
 * written by `model.save()` in tfjs and by `tensorflowjs_converter` for Keras
 * models, and its topology flattened into a list of layer calls.
 *
 * Only what the converter reads is typed; config values stay `unknown` and
 * are read through {@link LayerConfig}.
 */

/** One weight in the manifest; data follows in manifest order. */
export interface WeightSpec {
  name: string;
  shape: number[];
  dtype: 'float32' | 'int32' | 'bool' | 'string' | 'complex64';
  /** Quantised storage (tensorflowjs_converter --quantize_*). */
  quantization?: { dtype: 'uint8' | 'uint16' | 'float16'; scale?: number; min?: number; original_dtype?: string };
}

/** A `model.json` file. */
export interface ModelJson {
  format?: string;
  generatedBy?: string;
  convertedBy?: string | null;
  modelTopology: unknown;
  weightsManifest: { paths: string[]; weights: WeightSpec[] }[];
}

/** What the converter needs in memory: the topology, the weight specs and their concatenated data. */
export interface LayersModelArtifacts {
  modelTopology: unknown;
  weightSpecs: WeightSpec[];
  weightData: ArrayBuffer | Uint8Array;
}

/** A static shape in tfjs convention: `null` for an unknown dim (the batch dim is one). */
export type Shape = (number | null)[];

/** A reference to one output tensor of one call of a layer (Keras `[layer, node, tensor]`). */
export interface TensorRef {
  layer: string;
  node: number;
  tensor: number;
}

/** A layer as serialised: class, config and the tensors each of its calls ("nodes") consumes. */
export interface LayerSpec {
  name: string;
  className: string;
  config: Record<string, unknown>;
  /** `inbound[node]` lists the inputs of the layer's `node`-th call. Empty for an InputLayer. */
  inbound: TensorRef[][];
}

/** A model input: an InputLayer's name, static shape and dtype. */
export interface InputSpec {
  name: string;
  shape: Shape;
  dtype: string;
}

/** A model topology flattened into layers, inputs and outputs (Sequential models are rewritten as functional ones). */
export interface ModelGraph {
  name: string;
  /** Every layer but the InputLayers, in serialised order. */
  layers: LayerSpec[];
  inputs: InputSpec[];
  outputs: TensorRef[];
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The topology object, unwrapped from the `model_config` envelope Keras' HDF5 → tfjs converter sometimes leaves. */
function topologyRoot(topology: unknown): Json {
  if (!isObject(topology)) throw new Error('model.json: modelTopology is not an object');
  const inner = topology.model_config;
  return isObject(inner) ? inner : topology;
}

function layerList(config: unknown, where: string): Json[] {
  // Old tfjs/Keras Sequential configs are a bare list of layers; newer ones are { name, layers }.
  const layers = Array.isArray(config) ? config : isObject(config) ? config.layers : undefined;
  if (!Array.isArray(layers)) throw new Error(`model.json: ${where} has no layer list`);
  return layers.map((l, i) => {
    if (!isObject(l) || typeof l.class_name !== 'string' || !isObject(l.config)) {
      throw new Error(`model.json: ${where} layer ${i} is not { class_name, config }`);
    }
    return l;
  });
}

function layerName(layer: Json): string {
  const name = (layer.config as Json).name ?? layer.name;
  if (typeof name !== 'string' || name === '')
    throw new Error(`model.json: a ${String(layer.class_name)} layer has no name`);
  return name;
}

/** `batch_input_shape` (or `batch_shape`, Keras 3) of a layer config, if it declares one. */
function batchInputShape(config: Json): Shape | undefined {
  const shape = config.batch_input_shape ?? config.batch_shape ?? config.batchInputShape;
  if (!Array.isArray(shape)) return undefined;
  return shape.map((d) => (typeof d === 'number' ? d : null));
}

function inputSpec(name: string, config: Json): InputSpec {
  const shape = batchInputShape(config);
  if (shape === undefined) throw new Error(`model.json: input '${name}' has no batch_input_shape`);
  const dtype = typeof config.dtype === 'string' ? config.dtype : 'float32';
  return { name, shape, dtype };
}

function parseSequential(root: Json): ModelGraph {
  const config = root.config;
  const name = isObject(config) && typeof config.name === 'string' ? config.name : 'sequential';
  const raw = layerList(config, 'Sequential');
  if (raw.length === 0) throw new Error('model.json: empty Sequential model');
  let input: InputSpec;
  let rest: Json[];
  if (raw[0]!.class_name === 'InputLayer') {
    input = inputSpec(layerName(raw[0]!), raw[0]!.config as Json);
    rest = raw.slice(1);
  } else {
    // tfjs puts the input shape on the first layer; the input takes that layer's name + '_input', as tfjs does.
    input = inputSpec(`${layerName(raw[0]!)}_input`, raw[0]!.config as Json);
    rest = raw;
  }
  let previous: TensorRef = { layer: input.name, node: 0, tensor: 0 };
  const layers: LayerSpec[] = rest.map((l) => {
    const spec: LayerSpec = {
      name: layerName(l),
      className: l.class_name as string,
      config: l.config as Json,
      inbound: [[previous]],
    };
    previous = { layer: spec.name, node: 0, tensor: 0 };
    return spec;
  });
  return { name, layers, inputs: [input], outputs: [previous] };
}

function tensorRef(v: unknown, where: string): TensorRef {
  if (!Array.isArray(v) || typeof v[0] !== 'string' || typeof v[1] !== 'number' || typeof v[2] !== 'number') {
    throw new Error(`model.json: ${where}: expected [layer, node, tensor], got ${JSON.stringify(v)}`);
  }
  return { layer: v[0], node: v[1], tensor: v[2] };
}

function parseFunctional(root: Json): ModelGraph {
  const config = root.config;
  if (!isObject(config)) throw new Error('model.json: functional model has no config');
  const raw = layerList(config, 'model');
  const inputs: InputSpec[] = [];
  const layers: LayerSpec[] = [];
  for (const l of raw) {
    const name = layerName(l);
    if (l.class_name === 'InputLayer') {
      inputs.push(inputSpec(name, l.config as Json));
      continue;
    }
    const nodes = l.inbound_nodes;
    if (!Array.isArray(nodes)) throw new Error(`model.json: layer '${name}' has no inbound_nodes`);
    const inbound = nodes.map((node, i) => {
      if (!Array.isArray(node)) {
        // Keras 3 writes { args, kwargs } with keras_history; tfjs and Keras 2 write lists.
        throw new Error(
          `model.json: layer '${name}' node ${i} is in the Keras 3 format, which tfjs cannot load either; re-save with Keras 2 / tf.keras`,
        );
      }
      return node.map((ref) => tensorRef(ref, `layer '${name}' node ${i}`));
    });
    layers.push({ name, className: l.class_name as string, config: l.config as Json, inbound });
  }
  const inputNames = (config.input_layers as unknown[] | undefined)?.map((r) => tensorRef(r, 'input_layers').layer);
  const ordered =
    inputNames === undefined
      ? inputs
      : inputNames.map((n) => {
          const spec = inputs.find((i) => i.name === n);
          if (spec === undefined) throw new Error(`model.json: input_layers names '${n}', which is not an InputLayer`);
          return spec;
        });
  const outputs = (config.output_layers as unknown[] | undefined)?.map((r) => tensorRef(r, 'output_layers'));
  if (outputs === undefined || outputs.length === 0) throw new Error('model.json: model has no output_layers');
  return { name: typeof config.name === 'string' ? config.name : 'model', layers, inputs: ordered, outputs };
}

/** Flattens a LayersModel topology (Sequential, Model or Functional) into a {@link ModelGraph}. */
export function parseTopology(topology: unknown): ModelGraph {
  const root = topologyRoot(topology);
  switch (root.class_name) {
    case 'Sequential':
      return parseSequential(root);
    case 'Model':
    case 'Functional':
      return parseFunctional(root);
    default:
      throw new Error(
        `model.json: unsupported model class '${String(root.class_name)}' (expected Sequential, Model or Functional)`,
      );
  }
}
