/**
 * Channels-last (tfjs' default, NHWC / NWC / NDHWC) versus ONNX's
 * channels-first convolutions and pools (NCHW / NCW / NCDHW).
 *
 * Porting note: tfjs keeps every tensor channels-last; ONNX Conv, MaxPool and
 * AveragePool read channels-first. The converter keeps the whole graph in
 * tfjs layout and wraps each conv/pool in a pair of Transposes (to
 * channels-first and back). That is the simplest layout that is always right:
 * every other layer (Flatten before a Dense, Concatenate's axis, Reshape,
 * Permute, BatchNormalization's axis) sees exactly the tensor tfjs sees, so
 * Flatten after a conv flattens in NHWC order and matches the Dense kernel
 * without touching it. The cost is small: onnxruntime's transpose optimizer
 * cancels the back-to-back pairs at load time (Conv → ReLU → Conv → MaxPool
 * keeps only the first and the last Transpose after its optimisations).
 */
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { unsupported } from './errors.ts';
import type { LayerConfig } from './layer-config.ts';
import type { Shape } from './model-json.ts';

/** True for data_format 'channels_first' (Keras) / 'channelsFirst' (tfjs); refuses anything else but channels-last. */
export function isChannelsFirst(config: LayerConfig): boolean {
  const format = config.get('data_format') ?? 'channels_last';
  if (format === 'channels_first' || format === 'channelsFirst') return true;
  if (format === 'channels_last' || format === 'channelsLast') return false;
  throw unsupported(`data_format '${String(format)}' is not supported`);
}

/** Permutation of an N-D channels-last tensor to channels-first: [0, N-1, 1, ..., N-2]. */
function toChannelsFirstPerm(rank: number): number[] {
  return [0, rank - 1, ...Array.from({ length: rank - 2 }, (_, i) => i + 1)];
}

/** Permutation of an N-D channels-first tensor to channels-last: [0, 2, ..., N-1, 1]. */
function toChannelsLastPerm(rank: number): number[] {
  return [0, ...Array.from({ length: rank - 2 }, (_, i) => i + 2), 1];
}

/**
 * Runs `op` (which takes and returns channels-first values) on a tensor in
 * the layer's data format: channels-last inputs are transposed in and out.
 */
export function channelsFirstScope(
  g: GraphBuilder,
  x: string,
  rank: number,
  channelsFirst: boolean,
  op: (xNchw: string) => string,
): string {
  if (channelsFirst) return op(x);
  const nchw = g.op('Transpose', [x], { perm: toChannelsFirstPerm(rank) });
  return g.op('Transpose', [op(nchw)], { perm: toChannelsLastPerm(rank) });
}

/** Spatial dims of a shape (the dims between batch and channels, either layout). */
export function spatialDims(shape: Shape, channelsFirst: boolean): Shape {
  return channelsFirst ? shape.slice(2) : shape.slice(1, -1);
}

/** Channel count of a shape in the given layout. */
export function channelDim(shape: Shape, channelsFirst: boolean): number | null {
  return channelsFirst ? shape[1]! : shape[shape.length - 1]!;
}

/** Assembles a shape from batch, spatial dims and channels in the given layout. */
export function withSpatial(
  batch: number | null,
  spatial: Shape,
  channels: number | null,
  channelsFirst: boolean,
): Shape {
  return channelsFirst ? [batch, channels, ...spatial] : [batch, ...spatial, channels];
}

/** Keras padding modes, as ONNX Conv/Pool attributes. */
export type Padding = 'valid' | 'same' | 'causal';

/**
 * ONNX padding attributes for a Keras padding mode over spatial dims `lengths`.
 *  - 'same': TF pads total = max((⌈n / s⌉ - 1)·s + (k - 1)·d + 1 - n, 0) with the
 *    odd pixel at the end. ONNX's SAME_UPPER is the same split but does not
 *    clamp a negative total (stride > kernel) at 0, and onnxruntime then
 *    refuses the node; so explicit pads are written when the lengths are
 *    known, SAME_UPPER only when one is not.
 *  - 'causal' (Conv1D): (k - 1)·d at the start only.
 */
export function paddingAttrs(
  padding: Padding,
  lengths: Shape,
  kernel: number[],
  strides: number[],
  dilations: number[],
): { auto_pad?: string; pads?: number[] } {
  if (padding === 'valid') return { auto_pad: 'VALID' };
  if (padding === 'causal') {
    if (kernel.length !== 1) throw unsupported(`padding 'causal' is only for 1-D convolutions`);
    return { pads: [(kernel[0]! - 1) * dilations[0]!, 0] };
  }
  if (lengths.some((n) => n === null)) {
    // The total is never negative when the dilated window is at least the stride.
    if (kernel.some((k, i) => (k - 1) * dilations[i]! + 1 < strides[i]!)) {
      throw unsupported("padding 'same' with a stride larger than the window needs known spatial sizes");
    }
    return { auto_pad: 'SAME_UPPER' };
  }
  const totals = (lengths as number[]).map((n, i) =>
    Math.max((Math.ceil(n / strides[i]!) - 1) * strides[i]! + (kernel[i]! - 1) * dilations[i]! + 1 - n, 0),
  );
  const begins = totals.map((t) => Math.floor(t / 2));
  return { pads: [...begins, ...totals.map((t, i) => t - begins[i]!)] };
}

/** Output length of one spatial dim of a conv/pool (TF's formulas); null stays null. */
export function outputLength(
  length: number | null,
  kernel: number,
  stride: number,
  dilation: number,
  padding: Padding,
): number | null {
  if (length === null) return null;
  if (padding === 'valid') return Math.floor((length - (kernel - 1) * dilation - 1) / stride) + 1;
  return Math.ceil(length / stride); // 'same', and 'causal' (which pads to keep the length)
}

/** Reads a Keras padding mode from a config. */
export function readPadding(config: LayerConfig, allowCausal: boolean): Padding {
  const padding = config.string('padding', 'valid');
  if (padding === 'valid' || padding === 'same' || (allowCausal && padding === 'causal')) return padding;
  throw unsupported(`padding '${padding}' is not supported`);
}
