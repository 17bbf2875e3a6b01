/**
 * Core layers: Dense, Embedding, the activation layers, the inference-time
 * identities (Dropout and friends), and the shape layers (Flatten, Reshape,
 * Permute, RepeatVector).
 */
import { applyActivation } from '../activations.ts';
import { unsupported } from '../errors.ts';
import type { Shape } from '../model-json.ts';
import { registerLayerConverter, type LayerContext, type Value } from '../registry.ts';

const knownProduct = (dims: Shape): number | null =>
  dims.every((d) => d !== null) ? (dims as number[]).reduce((a, b) => a * b, 1) : null;

/**
 * Dense: y = activation(x · kernel + bias), over the last axis of x (any rank).
 */
function convertDense(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  const x = ctx.input();
  const units = config.number('units');
  const kernel = ctx.weights.get('kernel');
  const inDim = x.shape[x.shape.length - 1];
  if (kernel.shape[1] !== units || (inDim != null && kernel.shape[0] !== inDim)) {
    throw new Error(`kernel [${kernel.shape}] does not map ${inDim} features to ${units} units`);
  }
  // x · kernel
  let y = g.op('MatMul', [x.name, ctx.param('kernel', kernel)]);
  // + bias
  if (config.bool('use_bias', true)) y = g.op('Add', [y, ctx.param('bias', ctx.weights.get('bias', [units]))]);
  return [
    applyActivation(g, config.get('activation'), {
      name: y,
      shape: [...x.shape.slice(0, -1), units],
      dtype: 'float32',
    }),
  ];
}

/**
 * Embedding: y[…, :] = embeddings[int(x[…]), :]. tfjs casts float indices to
 * int32 (truncating); Cast to int64 truncates the same way.
 */
function convertEmbedding(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  const x = ctx.input();
  // mask_zero makes downstream RNNs skip steps; an ONNX graph has no masks to pass along.
  if (config.bool('mask_zero', false)) throw unsupported('mask_zero=true (masking) is not supported');
  const table = ctx.weights.get('embeddings');
  const indices = x.dtype === 'int32' || x.dtype === 'int64' ? x.name : g.cast(x.name, 'int64');
  // embeddings[indices]
  const y = g.op('Gather', [ctx.param('embeddings', table), indices], { axis: 0 });
  return [{ name: y, shape: [...x.shape, table.shape[1]!], dtype: 'float32' }];
}

/** Activation: y = activation(x). */
function convertActivation(ctx: LayerContext): Value[] {
  return [applyActivation(ctx.g, ctx.config.get('activation'), ctx.input())];
}

/** ReLU: y = min(max(x, 0), max_value) (no cap without max_value). */
function convertReLU(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  const x = ctx.input();
  config.refuseUnless('negative_slope', undefined, null, 0);
  config.refuseUnless('threshold', undefined, null, 0);
  const max = config.get('max_value');
  if (max == null) return [{ ...x, name: g.op('Relu', [x.name]) }];
  return [{ ...x, name: g.op('Clip', [x.name, g.constFloat(0), g.constFloat(config.number('max_value'))]) }];
}

/** LeakyReLU: y = x ≥ 0 ? x : alpha·x (alpha 0.3 by default; Keras 3 calls it negative_slope). */
function convertLeakyReLU(ctx: LayerContext): Value[] {
  const x = ctx.input();
  const alpha = ctx.config.number('alpha', ctx.config.number('negative_slope', 0.3));
  return [{ ...x, name: ctx.g.op('LeakyRelu', [x.name], { alpha }) }];
}

/** ELU: y = x > 0 ? x : alpha·(exp(x) - 1) (alpha 1 by default). */
function convertELU(ctx: LayerContext): Value[] {
  const x = ctx.input();
  return [{ ...x, name: ctx.g.op('Elu', [x.name], { alpha: ctx.config.number('alpha', 1) }) }];
}

/** ThresholdedReLU: y = x > theta ? x : 0 (theta 1 by default). */
function convertThresholdedReLU(ctx: LayerContext): Value[] {
  const x = ctx.input();
  return [{ ...x, name: ctx.g.op('ThresholdedRelu', [x.name], { alpha: ctx.config.number('theta', 1) }) }];
}

/** Softmax: y = exp(x) / Σ_axis exp(x) (axis -1 by default). */
function convertSoftmax(ctx: LayerContext): Value[] {
  const x = ctx.input();
  const raw = ctx.config.get('axis');
  const axis = raw == null ? -1 : Array.isArray(raw) && raw.length === 1 ? (raw[0] as number) : raw;
  if (typeof axis !== 'number') throw unsupported(`softmax over axes ${JSON.stringify(raw)} is not supported`);
  return [{ ...x, name: ctx.g.op('Softmax', [x.name], { axis }) }];
}

/** PReLU: y = x ≥ 0 ? x : alpha ⊙ x, alpha a learned [...dims] weight broadcast over the batch. */
function convertPReLU(ctx: LayerContext): Value[] {
  const x = ctx.input();
  const alpha = ctx.param('alpha', ctx.weights.get('alpha'));
  return [{ ...x, name: ctx.g.op('PRelu', [x.name, alpha]) }];
}

/** Dropout and the noise layers: y = x at inference (tfjs' predict() never applies them). */
function convertIdentity(ctx: LayerContext): Value[] {
  return [ctx.input()];
}

/**
 * Flatten: y = reshape(x, [batch, -1]) in channels-last element order, which
 * is what the following Dense kernel was trained on. A channels_first Flatten
 * moves channels last first, as tfjs does.
 */
function convertFlatten(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  let x = ctx.input();
  const format = config.get('data_format');
  if ((format === 'channels_first' || format === 'channelsFirst') && x.shape.length > 2) {
    const perm = [0, ...Array.from({ length: x.shape.length - 2 }, (_, i) => i + 2), 1];
    x = { ...x, name: g.op('Transpose', [x.name], { perm }), shape: perm.map((p) => x.shape[p]!) };
  }
  return [{ ...x, name: g.op('Flatten', [x.name], { axis: 1 }), shape: [x.shape[0]!, knownProduct(x.shape.slice(1))] }];
}

/** Reshape: y = reshape(x, [batch, ...target_shape]) (one target dim may be -1, or null as tfjs writes it). */
function convertReshape(ctx: LayerContext): Value[] {
  const x = ctx.input();
  const raw = ctx.config.get('target_shape');
  // tfjs serialises the inferred dim (-1) as null.
  if (!Array.isArray(raw) || !raw.every((d) => d === null || Number.isInteger(d)))
    throw unsupported(`target_shape ${JSON.stringify(raw)} is not a list of integers`);
  const target = raw.map((d: number | null) => d ?? -1);
  // ONNX Reshape: 0 copies the input's dim (the batch), -1 is inferred.
  const y = ctx.g.op('Reshape', [x.name, ctx.g.constInt64([0, ...target])]);
  const total = knownProduct(x.shape.slice(1));
  const known = target.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
  const shape = target.map((d) => (d !== -1 ? d : total === null ? null : total / known));
  return [{ ...x, name: y, shape: [x.shape[0]!, ...shape] }];
}

/** Permute(dims): y = transpose(x, [0, ...dims]) (dims are 1-based: the batch stays first). */
function convertPermute(ctx: LayerContext): Value[] {
  const x = ctx.input();
  const dims = ctx.config.ints('dims', x.shape.length - 1);
  const perm = [0, ...dims];
  return [{ ...x, name: ctx.g.op('Transpose', [x.name], { perm }), shape: perm.map((p) => x.shape[p]!) }];
}

/** RepeatVector(n): y[b, k, :] = x[b, :] for k < n. */
function convertRepeatVector(ctx: LayerContext): Value[] {
  const { g } = ctx;
  const x = ctx.input();
  const n = ctx.config.number('n');
  // tile(unsqueeze(x, 1), [1, n, 1])
  const y = g.op('Tile', [g.unsqueeze(x.name, [1]), g.constInt64([1, n, 1])]);
  return [{ ...x, name: y, shape: [x.shape[0]!, n, x.shape[1]!] }];
}

registerLayerConverter('Dense', convertDense);
registerLayerConverter('Embedding', convertEmbedding);
registerLayerConverter('Activation', convertActivation);
registerLayerConverter('ReLU', convertReLU);
registerLayerConverter('LeakyReLU', convertLeakyReLU);
registerLayerConverter('ELU', convertELU);
registerLayerConverter('ThresholdedReLU', convertThresholdedReLU);
registerLayerConverter('Softmax', convertSoftmax);
registerLayerConverter('PReLU', convertPReLU);
for (const identity of [
  'Dropout',
  'SpatialDropout1D',
  'SpatialDropout2D',
  'GaussianNoise',
  'GaussianDropout',
  'AlphaDropout',
]) {
  registerLayerConverter(identity, convertIdentity);
}
registerLayerConverter('Flatten', convertFlatten);
registerLayerConverter('Reshape', convertReshape);
registerLayerConverter('Permute', convertPermute);
registerLayerConverter('RepeatVector', convertRepeatVector);
