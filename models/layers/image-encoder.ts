import type * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import type { Dim, GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ImageInputSpec } from '../archs/types.ts';
import type { ParamStore } from '../params.ts';
import { ConvEncoder } from './conv-encoder.ts';
import { FeatureEncoder } from './feature-encoder.ts';

/** What captioning decoders read from an image: a spatial grid for attention and one pooled vector. */
export interface ImageFeatures {
  /** [B, L, C], L = h·w locations in row-major order. */
  grid: tf.Tensor3D;
  /** [B, C], the mean over the grid. */
  pooled: tf.Tensor2D;
}

/** The image side of a captioning model: pixels (or a frozen encoder's features) to {@link ImageFeatures}. */
export interface ImageEncoder {
  /** C, the size of each grid vector and of the pooled vector. */
  readonly channels: number;
  /** L, the number of grid locations. */
  readonly locations: number;
  /** Shape of one input, without the batch axis. */
  readonly inputShape: readonly number[];
  /** The encoder graph's input: its name and dims. */
  readonly onnxInput: { name: string; dims: Dim[] };
  /** images [B, ...inputShape]; `training` switches dropout-like behaviour on (none so far). */
  encode(images: tf.Tensor, training: boolean): ImageFeatures;
  /** Emits the encoder's nodes reading `input` (a float32 [B, ...inputShape] value). */
  toOnnx(g: GraphBuilder, input: string): { grid: string; pooled: string };
}

/** Schema fields of {@link ConvEncoderConfig}, for the architectures' settings schemas. */
export const convEncoderSettings = { cnnChannels: z.array(z.number().int().positive()).min(1) };

export function createImageEncoder(
  params: ParamStore,
  spec: ImageInputSpec | undefined,
  config: ConvEncoderConfig,
): ImageEncoder {
  if (spec === undefined) throw new TypeError('an image model needs sizes.image (pixels or frozen-encoder features)');
  return spec.kind === 'pixels'
    ? new ConvEncoder(params, 'encoder/cnn', spec.size, config.cnnChannels)
    : new FeatureEncoder(spec.shape);
}

/** Settings of the CNN trained from scratch (ignored when the model reads a frozen encoder's features). */
export type ConvEncoderConfig = z.infer<z.ZodObject<typeof convEncoderSettings>>;
