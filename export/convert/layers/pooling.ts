/**
 * Pooling layers: Max/AveragePooling1D/2D/3D (channels-first inside
 * Transposes, see layout.ts) and the global poolings (reductions over the
 * spatial axes, layout-free).
 */
import { unsupported } from '../errors.ts';
import {
  channelDim,
  channelsFirstScope,
  isChannelsFirst,
  outputLength,
  paddingAttrs,
  readPadding,
  spatialDims,
  withSpatial,
} from '../layout.ts';
import { registerLayerConverter, type LayerContext, type Value } from '../registry.ts';

/**
 * MaxPooling{1,2,3}D: y[p] = max of x over the window at p.
 * AveragePooling{1,2,3}D: y[p] = mean of x over the window at p; TF leaves
 * 'same' padding out of the mean, as ONNX count_include_pad = 0 does.
 * Windows are pool_size, moved by strides (pool_size by default).
 */
const convertPool =
  (op: 'MaxPool' | 'AveragePool', rank: number) =>
  (ctx: LayerContext): Value[] => {
    const { g, config } = ctx;
    const x = ctx.input();
    if (x.shape.length !== rank + 2) throw unsupported(`expects a rank-${rank + 2} input, got rank ${x.shape.length}`);
    const channelsFirst = isChannelsFirst(config);
    const kernel = config.ints('pool_size', rank);
    const strides = config.ints('strides', rank, kernel);
    const padding = readPadding(config, false);
    const ones = kernel.map(() => 1);
    const attrs = {
      kernel_shape: kernel,
      strides,
      ...paddingAttrs(padding, spatialDims(x.shape, channelsFirst), kernel, strides, ones),
      count_include_pad: op === 'AveragePool' ? 0 : undefined,
    };
    // pool(x)
    const y = channelsFirstScope(g, x.name, rank + 2, channelsFirst, (xc) => g.op(op, [xc], attrs));
    const spatial = spatialDims(x.shape, channelsFirst).map((d, i) =>
      outputLength(d, kernel[i]!, strides[i]!, 1, padding),
    );
    return [
      { ...x, name: y, shape: withSpatial(x.shape[0]!, spatial, channelDim(x.shape, channelsFirst), channelsFirst) },
    ];
  };

/**
 * GlobalAveragePooling{1,2,3}D: y[b, c] = mean of x[b, …, c] over the spatial axes.
 * GlobalMaxPooling{1,2,3}D: y[b, c] = max of x[b, …, c] over the spatial axes.
 * (keepdims keeps the spatial axes as size 1.)
 */
const convertGlobalPool =
  (op: 'ReduceMean' | 'ReduceMax', rank: number) =>
  (ctx: LayerContext): Value[] => {
    const x = ctx.input();
    if (x.shape.length !== rank + 2) throw unsupported(`expects a rank-${rank + 2} input, got rank ${x.shape.length}`);
    const channelsFirst = isChannelsFirst(ctx.config);
    const keepdims = ctx.config.bool('keepdims', false);
    const axes = Array.from({ length: rank }, (_, i) => i + (channelsFirst ? 2 : 1));
    const y = ctx.g.reduce(op, x.name, axes, keepdims);
    const channels = channelDim(x.shape, channelsFirst);
    const shape = keepdims
      ? withSpatial(
          x.shape[0]!,
          axes.map(() => 1),
          channels,
          channelsFirst,
        )
      : [x.shape[0]!, channels];
    return [{ ...x, name: y, shape }];
  };

for (const rank of [1, 2, 3]) {
  registerLayerConverter(`MaxPooling${rank}D`, convertPool('MaxPool', rank));
  registerLayerConverter(`AveragePooling${rank}D`, convertPool('AveragePool', rank));
  registerLayerConverter(`GlobalAveragePooling${rank}D`, convertGlobalPool('ReduceMean', rank));
  registerLayerConverter(`GlobalMaxPooling${rank}D`, convertGlobalPool('ReduceMax', rank));
}
