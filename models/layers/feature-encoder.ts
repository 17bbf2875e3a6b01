import * as tf from '@tensorflow/tfjs-core';
import type { Dim, GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ImageEncoder, ImageFeatures } from './image-encoder.ts';

/**
 * The image side of a model that reads a frozen pretrained encoder's output (`--encoder some.onnx`):
 * nothing to learn, only the layout change from what an ONNX CNN emits to {@link ImageFeatures}.
 *   [B, C, h, w] (a spatial map) → grid [B, h·w, C], pooled = mean over the grid
 *   [B, C]       (a pooled vector) → grid [B, 1, C] (one location), pooled = the vector
 * At export this graph is merged behind the foreign encoder's nodes (export/merge-encoder.ts), so
 * the served model still takes pixels.
 */
export class FeatureEncoder implements ImageEncoder {
  readonly channels: number;
  readonly locations: number;
  readonly inputShape: readonly number[];
  readonly onnxInput: { name: string; dims: Dim[] };

  constructor(shape: readonly number[]) {
    if (!(shape.length === 1 || shape.length === 3) || !shape.every((d) => Number.isInteger(d) && d > 0)) {
      throw new RangeError(`frozen encoder features must be [C] or [C, h, w] per image, got [${shape.join(', ')}]`);
    }
    this.channels = shape[0];
    this.locations = shape.length === 3 ? shape[1] * shape[2] : 1;
    this.inputShape = [...shape];
    this.onnxInput = { name: 'features', dims: ['batch', ...shape] };
  }

  encode(images: tf.Tensor, _training: boolean): ImageFeatures {
    return tf.tidy(() => {
      const [B] = images.shape;
      if (this.inputShape.length === 1) {
        const pooled = tf.reshape(images, [B, this.channels]) as tf.Tensor2D;
        return { grid: tf.reshape(pooled, [B, 1, this.channels]) as tf.Tensor3D, pooled };
      }
      const grid = tf.transpose(tf.reshape(images, [B, this.channels, this.locations]), [0, 2, 1]) as tf.Tensor3D;
      return { grid, pooled: tf.mean(grid, 1) as tf.Tensor2D };
    });
  }

  toOnnx(g: GraphBuilder, input: string): { grid: string; pooled: string } {
    if (this.inputShape.length === 1) {
      // grid [B, 1, C] = unsqueeze(features, 1)
      return { grid: g.unsqueeze(input, [1]), pooled: input };
    }
    // grid [B, L, C] = transpose(reshape(features, [B, C, L])); pooled = mean over L
    const grid = g.op('Transpose', [g.op('Reshape', [input, g.constInt64([0, this.channels, this.locations])])], {
      perm: [0, 2, 1],
    });
    return { grid, pooled: g.reduce('ReduceMean', grid, [1], false) };
  }
}
