/**
 * Normalisation layers: BatchNormalization (inference form, folded into a
 * scale and a shift) and LayerNormalization.
 */
import { unsupported } from '../errors.ts';
import type { LayerConfig } from '../layer-config.ts';
import { registerLayerConverter, type LayerContext, type Value } from '../registry.ts';
import type { Array32 } from '../weight-layout.ts';

/** Axes of a config value (a number or a list), made non-negative for a tensor of `rank`, sorted. */
function readAxes(config: LayerConfig, rank: number): number[] {
  const raw = config.get('axis') ?? -1;
  const list = Array.isArray(raw) ? raw : [raw];
  if (!list.every((a) => Number.isInteger(a) && a >= -rank && a < rank))
    throw unsupported(`axis ${JSON.stringify(raw)} does not fit a rank-${rank} input`);
  const axes = [...new Set((list as number[]).map((a) => (a < 0 ? a + rank : a)))].sort((a, b) => a - b);
  if (axes.includes(0)) throw unsupported('normalising over the batch axis is not supported');
  return axes;
}

/** Shape that broadcasts a per-`axes` parameter against a rank-`rank` tensor (the batch axis left out). */
function broadcastShape(shape: number[], axes: number[], rank: number): number[] {
  const out: number[] = [];
  for (let a = Math.min(...axes); a < rank; a++) {
    const k = axes.indexOf(a);
    out.push(k >= 0 ? shape[k]! : 1);
  }
  return out;
}

/**
 * BatchNormalization at inference, along `axis` (the channels):
 *   y = (x - moving_mean) / √(moving_variance + ε) · γ + β
 * folded at conversion time (in float64) into
 *   y = x · a + b,   a = γ / √(moving_variance + ε),   b = β - moving_mean · a
 * (γ = 1 without `scale`, β = 0 without `center`).
 */
function convertBatchNormalization(ctx: LayerContext): Value[] {
  const { g, config, weights } = ctx;
  const x = ctx.input();
  const axes = readAxes(config, x.shape.length);
  if (axes.length !== 1) throw unsupported(`batch normalisation over ${axes.length} axes is not supported`);
  const eps = config.number('epsilon', 1e-3);
  const mean = weights.get('moving_mean').data;
  const variance = weights.get('moving_variance', [mean.length]).data;
  const gamma = config.bool('scale', true) ? weights.get('gamma', [mean.length]).data : undefined;
  const beta = config.bool('center', true) ? weights.get('beta', [mean.length]).data : undefined;
  const a = new Float32Array(mean.length);
  const b = new Float32Array(mean.length);
  for (let c = 0; c < mean.length; c++) {
    const scale = (gamma?.[c] ?? 1) / Math.sqrt(variance[c]! + eps);
    a[c] = scale;
    b[c] = (beta?.[c] ?? 0) - mean[c]! * scale;
  }
  const shape = broadcastShape([mean.length], axes, x.shape.length);
  // x · a
  const scaled = g.op('Mul', [x.name, ctx.param('scale', { shape, data: a })]);
  // + b
  return [{ ...x, name: g.op('Add', [scaled, ctx.param('shift', { shape, data: b })]) }];
}

/**
 * LayerNormalization over the `axis` dims (the last by default):
 *   y = (x - mean) / √(var + ε) · γ + β,  mean and (biased) var over those dims
 * As one ONNX LayerNormalization (opset ≥ 17) when the dims are the trailing
 * ones, else spelled out with ReduceMean.
 */
function convertLayerNormalization(ctx: LayerContext): Value[] {
  const { g, config, weights } = ctx;
  const x = ctx.input();
  const rank = x.shape.length;
  const axes = readAxes(config, rank);
  const eps = config.number('epsilon', 1e-3);
  const dims = axes.map((a) => x.shape[a]);
  if (dims.some((d) => d === null)) throw unsupported('normalised dims must have known sizes');
  const paramShape = broadcastShape(dims as number[], axes, rank);
  const param = (key: 'gamma' | 'beta', use: boolean): string | undefined => {
    if (!use) return undefined;
    const w: Array32 = weights.get(key);
    return ctx.param(key, { shape: paramShape, data: w.data });
  };
  const gamma = param('gamma', config.bool('scale', true));
  const beta = param('beta', config.bool('center', true));
  const trailing = axes.every((a, i) => a === rank - axes.length + i);
  if (trailing && g.opset >= 17) {
    const scale = gamma ?? g.constFloat(new Float32Array(paramShape.reduce((p, d) => p * d, 1)).fill(1), paramShape);
    // LayerNormalization(x, γ, β) over axes [axis, rank)
    const y = g.op('LayerNormalization', beta === undefined ? [x.name, scale] : [x.name, scale, beta], {
      axis: axes[0]!,
      epsilon: eps,
    });
    return [{ ...x, name: y }];
  }
  // mean = E[x], d = x - mean
  const d = g.op('Sub', [x.name, g.reduce('ReduceMean', x.name, axes, true)]);
  // var = E[d²]
  const variance = g.reduce('ReduceMean', g.op('Mul', [d, d]), axes, true);
  // n = d / √(var + ε)
  let y = g.op('Div', [d, g.op('Sqrt', [g.op('Add', [variance, g.constFloat(eps)])])]);
  // · γ + β
  if (gamma !== undefined) y = g.op('Mul', [y, gamma]);
  if (beta !== undefined) y = g.op('Add', [y, beta]);
  return [{ ...x, name: y }];
}

registerLayerConverter('BatchNormalization', convertBatchNormalization);
registerLayerConverter('LayerNormalization', convertLayerNormalization);
