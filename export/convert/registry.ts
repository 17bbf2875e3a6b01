/**
 * The layer-handler registry: one converter per tfjs layer class
 * (`registerLayerConverter('Dense', convertDense)`). Handlers live in
 * `layers/*.ts`, grouped by category; importing `layers/index.ts` registers
 * them all.
 */
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { Registry } from '../../core/registry.ts';
import type { DType } from '../../core/onnx/types.ts';
import type { LayerConfig } from './layer-config.ts';
import type { Shape } from './model-json.ts';
import type { Array32 } from './weight-layout.ts';
import type { LayerWeights } from './weights.ts';

/** A tensor of the graph being built: its ONNX value name and its static shape in tfjs layout. */
export interface Value {
  name: string;
  /** tfjs shape (channels-last unless a layer says otherwise); `null` = unknown, as the batch dim. */
  shape: Shape;
  dtype: DType;
}

/** What a handler gets for one call of one layer. */
export interface LayerContext {
  readonly g: GraphBuilder;
  /** The layer's name (also the scope its nodes are created in). */
  readonly name: string;
  readonly className: string;
  readonly config: LayerConfig;
  /** The tensors this call consumes, in order. */
  readonly inputs: Value[];
  readonly weights: LayerWeights;
  /** The single input; refuses a call with more than one (e.g. an RNN given an initial state). */
  input(): Value;
  /**
   * Stores a (re-laid-out) weight as an initializer named `<layer>/<key>`.
   * A shared layer called again gets the same initializer back.
   */
  param(key: string, x: Array32): string;
  /**
   * Converts a wrapped layer (Bidirectional's RNN, TimeDistributed's inner
   * layer) with the given inputs and weights, under this layer's scope.
   */
  convertInner(
    inner: { className: string; config: Record<string, unknown> },
    inputs: Value[],
    weights: LayerWeights,
  ): Value[];
}

/** Emits the ONNX nodes of one layer call and returns its outputs. Throws UnsupportedLayerError to refuse. */
export type LayerConverter = (ctx: LayerContext) => Value[];

const converters = new Registry<LayerConverter>('converter for layer class');

/** Registers the converter of a layer class (the model.json `class_name`). Throws on a second registration. */
export function registerLayerConverter(className: string, convert: LayerConverter): void {
  converters.register(className, convert);
}

/** The converter of `className`, if any (the conversion reports every unsupported class at once). */
export function layerConverter(className: string): LayerConverter | undefined {
  return converters.find(className);
}
