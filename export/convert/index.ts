/**
 * `frost convert`: TensorFlow.js LayersModels (model.json + weight shards) to
 * ONNX (IR 8, opset 18 by default), in plain JavaScript.
 *
 *   const artifacts = await readModelFiles('model/model.json');
 *   const { bytes } = convertLayersModel(artifacts);
 *
 * Layers convert through a registry of per-class handlers (`layers/*.ts`);
 * add one with {@link registerLayerConverter}.
 */
export { convertLayersModel, type ConvertOptions, type ConvertResult, type GraphPort } from './convert.ts';
export { UnsupportedLayersError, type UnsupportedLayer } from './errors.ts';
export { readModelFiles, writeModelFiles, type SavedArtifacts } from './model-files.ts';
export type { LayersModelArtifacts, ModelJson, WeightSpec } from './model-json.ts';
export { type LayerContext, type LayerConverter, type Value } from './registry.ts';
