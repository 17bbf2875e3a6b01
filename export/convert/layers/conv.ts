/**
 * Convolution layers (Conv1D/2D/3D, DepthwiseConv2D, SeparableConv2D) and
 * the 2-D spatial layers (ZeroPadding2D, Cropping2D, UpSampling2D).
 * Convolutions run channels-first inside a pair of Transposes; see layout.ts.
 */
import { applyActivation } from '../activations.ts';
import { unsupported } from '../errors.ts';
import type { LayerConfig } from '../layer-config.ts';
import {
  channelDim,
  channelsFirstScope,
  isChannelsFirst,
  outputLength,
  paddingAttrs,
  readPadding,
  spatialDims,
  withSpatial,
  type Padding,
} from '../layout.ts';
import type { Shape } from '../model-json.ts';
import { registerLayerConverter, type LayerContext, type Value } from '../registry.ts';
import { transpose, type Array32 } from '../weight-layout.ts';

/** Geometry of a conv: kernel size, strides, dilations, padding, per spatial dim. */
interface ConvGeometry {
  kernel: number[];
  strides: number[];
  dilations: number[];
  padding: Padding;
}

function readGeometry(config: LayerConfig, rank: number): ConvGeometry {
  const ones = new Array<number>(rank).fill(1);
  return {
    kernel: config.ints('kernel_size', rank),
    strides: config.ints('strides', rank, ones),
    dilations: config.ints('dilation_rate', rank, ones),
    padding: readPadding(config, rank === 1),
  };
}

/** ONNX Conv attributes of a geometry, for spatial input dims `lengths`. */
function convAttrs(geo: ConvGeometry, lengths: Shape, group: number) {
  return {
    kernel_shape: geo.kernel,
    strides: geo.strides,
    dilations: geo.dilations,
    group,
    ...paddingAttrs(geo.padding, lengths, geo.kernel, geo.strides, geo.dilations),
  };
}

/** Output shape of a conv over `x` with `channels` output channels. */
function convShape(x: Shape, geo: ConvGeometry, channels: number, channelsFirst: boolean): Shape {
  const spatial = spatialDims(x, channelsFirst).map((d, i) =>
    outputLength(d, geo.kernel[i]!, geo.strides[i]!, geo.dilations[i]!, geo.padding),
  );
  return withSpatial(x[0]!, spatial, channels, channelsFirst);
}

/** Keras kernel [...k, in, out] → ONNX Conv W [out, in, ...k]. */
function convKernel(kernel: Array32, rank: number): Array32 {
  return transpose(kernel, [rank + 1, rank, ...Array.from({ length: rank }, (_, i) => i)]);
}

/**
 * Keras depthwise kernel [...k, in, multiplier] → ONNX W [in·multiplier, 1, ...k]
 * for a Conv with group = in: output channel c·multiplier + m of TF's
 * depthwise conv is group c's m-th filter, so [...k, in, m] read as
 * [...k, in·m] is already in ONNX's channel order.
 */
function depthwiseKernel(kernel: Array32, rank: number): Array32 {
  const channels = kernel.shape[rank]! * kernel.shape[rank + 1]!;
  const flat = transpose({ shape: [...kernel.shape.slice(0, rank), channels], data: kernel.data }, [
    rank,
    ...Array.from({ length: rank }, (_, i) => i),
  ]);
  return { shape: [channels, 1, ...kernel.shape.slice(0, rank)], data: flat.data };
}

/** The rank-(r + 2) input of an r-D conv layer. */
function convInput(ctx: LayerContext, rank: number): Value {
  const x = ctx.input();
  if (x.shape.length !== rank + 2) throw unsupported(`expects a rank-${rank + 2} input, got rank ${x.shape.length}`);
  return x;
}

/**
 * Conv1D / Conv2D / Conv3D: y = activation(conv(x, kernel) + bias)
 * (strides, dilation_rate, groups; padding valid, same, or causal for 1-D).
 */
const convertConv =
  (rank: number) =>
  (ctx: LayerContext): Value[] => {
    const { g, config } = ctx;
    const x = convInput(ctx, rank);
    const channelsFirst = isChannelsFirst(config);
    const geo = readGeometry(config, rank);
    const filters = config.number('filters');
    const group = config.number('groups', 1);
    const W = ctx.param('W', convKernel(ctx.weights.get('kernel'), rank));
    const B = config.bool('use_bias', true) ? [ctx.param('B', ctx.weights.get('bias', [filters]))] : [];
    // conv(x, W) + B
    const y = channelsFirstScope(g, x.name, rank + 2, channelsFirst, (xc) =>
      g.op('Conv', [xc, W, ...B], convAttrs(geo, spatialDims(x.shape, channelsFirst), group)),
    );
    return [
      applyActivation(g, config.get('activation'), {
        name: y,
        shape: convShape(x.shape, geo, filters, channelsFirst),
        dtype: 'float32',
      }),
    ];
  };

/**
 * DepthwiseConv2D: y[…, c·m + j] = activation(conv(x[…, c], depthwise_kernel[…, c, j]) + bias),
 * one conv per input channel c and multiplier index j: an ONNX Conv with group = channels.
 */
function convertDepthwiseConv2D(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  const x = convInput(ctx, 2);
  const channelsFirst = isChannelsFirst(config);
  const geo = readGeometry(config, 2);
  const kernel = ctx.weights.get('depthwise_kernel');
  const inChannels = kernel.shape[2]!;
  const outChannels = inChannels * kernel.shape[3]!;
  const W = ctx.param('W', depthwiseKernel(kernel, 2));
  const B = config.bool('use_bias', true) ? [ctx.param('B', ctx.weights.get('bias', [outChannels]))] : [];
  // grouped conv(x, W) + B
  const y = channelsFirstScope(g, x.name, 4, channelsFirst, (xc) =>
    g.op('Conv', [xc, W, ...B], convAttrs(geo, spatialDims(x.shape, channelsFirst), inChannels)),
  );
  return [
    applyActivation(g, config.get('activation'), {
      name: y,
      shape: convShape(x.shape, geo, outChannels, channelsFirst),
      dtype: 'float32',
    }),
  ];
}

/**
 * SeparableConv2D: y = activation(pointwise(depthwise(x)) + bias), the
 * depthwise conv carrying strides/dilation/padding and the pointwise conv 1×1.
 */
function convertSeparableConv2D(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  const x = convInput(ctx, 2);
  const channelsFirst = isChannelsFirst(config);
  const geo = readGeometry(config, 2);
  const filters = config.number('filters');
  const depthwise = ctx.weights.get('depthwise_kernel');
  const Wd = ctx.param('depthwise', depthwiseKernel(depthwise, 2));
  const Wp = ctx.param('pointwise', convKernel(ctx.weights.get('pointwise_kernel'), 2));
  const B = config.bool('use_bias', true) ? [ctx.param('B', ctx.weights.get('bias', [filters]))] : [];
  const y = channelsFirstScope(g, x.name, 4, channelsFirst, (xc) => {
    // depthwise(x)
    const d = g.op('Conv', [xc, Wd], convAttrs(geo, spatialDims(x.shape, channelsFirst), depthwise.shape[2]!));
    // pointwise(·) + bias
    return g.op('Conv', [d, Wp, ...B], { kernel_shape: [1, 1] });
  });
  return [
    applyActivation(g, config.get('activation'), {
      name: y,
      shape: convShape(x.shape, geo, filters, channelsFirst),
      dtype: 'float32',
    }),
  ];
}

/**
 * A Keras 2-D padding/cropping spec (n, [a, b] or [[top, bottom], [left, right]]) as [[top, bottom], [left, right]].
 */
function pairs2d(raw: unknown, key: string): [[number, number], [number, number]] {
  if (typeof raw === 'number')
    return [
      [raw, raw],
      [raw, raw],
    ];
  if (Array.isArray(raw) && raw.length === 2 && raw.every((v) => typeof v === 'number')) {
    return [
      [raw[0], raw[0]],
      [raw[1], raw[1]],
    ];
  }
  if (
    Array.isArray(raw) &&
    raw.length === 2 &&
    raw.every((p) => Array.isArray(p) && p.length === 2 && p.every((v) => typeof v === 'number'))
  ) {
    return raw as [[number, number], [number, number]];
  }
  throw unsupported(`${key} ${JSON.stringify(raw)} is not understood`);
}

const addKnown = (d: number | null, n: number): number | null => (d === null ? null : d + n);

/** ZeroPadding2D: y = x padded with zeros by [top, bottom] rows and [left, right] columns. */
function convertZeroPadding2D(ctx: LayerContext): Value[] {
  const x = convInput(ctx, 2);
  const channelsFirst = isChannelsFirst(ctx.config);
  const [[top, bottom], [left, right]] = pairs2d(ctx.config.get('padding') ?? 1, 'padding');
  // ONNX pads: [begin of each axis..., end of each axis...]
  const pads = channelsFirst ? [0, 0, top, left, 0, 0, bottom, right] : [0, top, left, 0, 0, bottom, right, 0];
  const y = ctx.g.op('Pad', [x.name, ctx.g.constInt64(pads)], { mode: 'constant' });
  const [h, w] = spatialDims(x.shape, channelsFirst);
  const shape = withSpatial(
    x.shape[0]!,
    [addKnown(h!, top + bottom), addKnown(w!, left + right)],
    channelDim(x.shape, channelsFirst),
    channelsFirst,
  );
  return [{ ...x, name: y, shape }];
}

/** Cropping2D: y = x[:, top : H - bottom, left : W - right, :]. */
function convertCropping2D(ctx: LayerContext): Value[] {
  const x = convInput(ctx, 2);
  const channelsFirst = isChannelsFirst(ctx.config);
  const [[top, bottom], [left, right]] = pairs2d(ctx.config.get('cropping') ?? 0, 'cropping');
  const axes = channelsFirst ? [2, 3] : [1, 2];
  // A negative end counts from the back, so unknown H and W work too.
  const end = (n: number): number => (n > 0 ? -n : Number.MAX_SAFE_INTEGER);
  const y = ctx.g.slice(x.name, [top, left], [end(bottom), end(right)], axes);
  const [h, w] = spatialDims(x.shape, channelsFirst);
  const shape = withSpatial(
    x.shape[0]!,
    [addKnown(h!, -top - bottom), addKnown(w!, -left - right)],
    channelDim(x.shape, channelsFirst),
    channelsFirst,
  );
  return [{ ...x, name: y, shape }];
}

/**
 * UpSampling2D(size, interpolation): tfjs resizes with align_corners and
 * half_pixel_centers off, i.e. source pixel = destination / size:
 *   nearest: y[i, j] = x[⌊i / s_h⌋, ⌊j / s_w⌋] (Resize asymmetric, floor)
 *   bilinear: linear interpolation at (i / s_h, j / s_w) (Resize asymmetric, linear)
 */
function convertUpSampling2D(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  const x = convInput(ctx, 2);
  const channelsFirst = isChannelsFirst(config);
  const [sh, sw] = config.ints('size', 2, [2, 2]);
  const interpolation = config.string('interpolation', 'nearest');
  if (interpolation !== 'nearest' && interpolation !== 'bilinear')
    throw unsupported(`interpolation '${interpolation}' is not supported`);
  const scales = channelsFirst ? [1, 1, sh!, sw!] : [1, sh!, sw!, 1];
  const y = g.op('Resize', [x.name, '', g.constFloat(scales)], {
    mode: interpolation === 'nearest' ? 'nearest' : 'linear',
    coordinate_transformation_mode: 'asymmetric',
    nearest_mode: interpolation === 'nearest' ? 'floor' : undefined,
  });
  const [h, w] = spatialDims(x.shape, channelsFirst);
  const times = (d: number | null, s: number): number | null => (d === null ? null : d * s);
  const shape = withSpatial(
    x.shape[0]!,
    [times(h!, sh!), times(w!, sw!)],
    channelDim(x.shape, channelsFirst),
    channelsFirst,
  );
  return [{ ...x, name: y, shape }];
}

registerLayerConverter('Conv1D', convertConv(1));
registerLayerConverter('Conv2D', convertConv(2));
registerLayerConverter('Conv3D', convertConv(3));
registerLayerConverter('DepthwiseConv2D', convertDepthwiseConv2D);
registerLayerConverter('SeparableConv2D', convertSeparableConv2D);
registerLayerConverter('ZeroPadding2D', convertZeroPadding2D);
registerLayerConverter('Cropping2D', convertCropping2D);
registerLayerConverter('UpSampling2D', convertUpSampling2D);
