import * as tf from '@tensorflow/tfjs-core';
import type { Dim, GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ParamStore } from '../params.ts';
import type { ImageEncoder, ImageFeatures } from './image-encoder.ts';

/**
 * A small residual CNN trained jointly with the decoder, from scratch:
 *   stem:    x₁ = relu(conv3×3/2(x) + b)                                   (3 → c₀)
 *   stage k: x_{k+1} = relu(conv1×1(avgpool2×2(x_k)) + α_k · conv3×3(relu(conv3×3/2(x_k))))   (c_{k-1} → c_k)
 * so each stage halves the resolution: 128² → 8² with four stages. The grid is the last stage's
 * [h·w, c] map; the pooled vector its mean.
 *
 * The shortcut averages 2×2 blocks before its 1×1 convolution (ResNet-D, He et al. 2019) rather
 * than taking every other pixel (ResNet's 1×1 stride-2 projection): while the branches are still
 * near zero the network is its shortcuts, and strided ones would see only 1 pixel in 4^k, so a
 * small object between the sampled pixels would not reach the grid at all.
 *
 * No normalisation layer: each residual branch is scaled by a learned scalar α_k that starts at 0
 * (SkipInit, De & Smith 2020), so the network starts as a chain of projections and trains stably
 * without batch statistics, and the exported graph is plain Conv/Relu/Add (α is folded into the
 * branch's second convolution at export).
 *
 * Layout: inputs are NCHW pixels as in ONNX (and the image pipeline); tfjs convolves NHWC, so the
 * input is transposed once and filters are kept as [kh, kw, in, out] (ONNX's [out, in, kh, kw] at export).
 */
interface Conv {
  /** [k, k, in, out] */ W: tf.Variable;
  /** [out] */ b: tf.Variable;
  stride: number;
  pad: number;
}

interface Stage {
  shortcut: Conv;
  conv1: Conv;
  conv2: Conv;
  /** [1] the branch scale α, 0 at initialisation. */
  alpha: tf.Variable;
}

export class ConvEncoder implements ImageEncoder {
  readonly channels: number;
  readonly locations: number;
  readonly inputShape: readonly number[];
  readonly onnxInput: { name: string; dims: Dim[] };
  private readonly stem: Conv;
  private readonly stages: Stage[];

  constructor(params: ParamStore, prefix: string, size: number, channels: number[]) {
    if (!Number.isInteger(size) || size < 2) throw new RangeError(`image size must be an integer >= 2, got ${size}`);
    if (channels.length === 0 || !channels.every((c) => Number.isInteger(c) && c > 0)) {
      throw new RangeError(`cnnChannels must be a non-empty list of positive integers, got [${channels.join(', ')}]`);
    }
    const conv = (name: string, k: number, cin: number, cout: number, stride: number): Conv => ({
      W: params.variable(`${prefix}/${name}/W`, [k, k, cin, cout], { kind: 'he-uniform' }),
      b: params.variable(`${prefix}/${name}/b`, [cout], { kind: 'zeros' }),
      stride,
      pad: (k - 1) / 2,
    });
    this.stem = conv('stem', 3, 3, channels[0], 2);
    this.stages = channels.slice(1).map((cout, i) => {
      const cin = channels[i];
      const name = `stage${i + 1}`;
      return {
        shortcut: conv(`${name}/shortcut`, 1, cin, cout, 1),
        conv1: conv(`${name}/conv1`, 3, cin, cout, 2),
        conv2: conv(`${name}/conv2`, 3, cout, cout, 1),
        alpha: params.variable(`${prefix}/${name}/alpha`, [1], { kind: 'zeros' }),
      };
    });
    // Every stage halves exactly, so the stride-2 branch and the 2×2-pooled shortcut agree in size.
    const factor = 2 ** channels.length;
    if (size % factor !== 0)
      throw new RangeError(`image size ${size} must be a multiple of ${factor} for ${channels.length} stride-2 stages`);
    const side = size / factor;
    this.channels = channels[channels.length - 1];
    this.locations = side * side;
    this.inputShape = [3, size, size];
    this.onnxInput = { name: 'pixels', dims: ['batch', 3, size, size] };
  }

  encode(images: tf.Tensor, _training: boolean): ImageFeatures {
    return tf.tidy(() => {
      const [B] = images.shape;
      const conv = (x: tf.Tensor4D, c: Conv) =>
        tf.add(tf.conv2d(x, c.W as tf.Tensor4D, c.stride as 1 | 2, c.pad), c.b) as tf.Tensor4D;
      let x = tf.relu(conv(tf.transpose(images as tf.Tensor4D, [0, 2, 3, 1]), this.stem));
      for (const s of this.stages) {
        const branch = conv(tf.relu(conv(x, s.conv1)), s.conv2);
        const shortcut = conv(tf.avgPool(x, 2, 2, 'valid') as tf.Tensor4D, s.shortcut);
        x = tf.relu(tf.add(shortcut, tf.mul(branch, s.alpha))) as tf.Tensor4D;
      }
      const grid = tf.reshape(x, [B, this.locations, this.channels]) as tf.Tensor3D;
      return { grid, pooled: tf.mean(grid, 1) as tf.Tensor2D };
    });
  }

  toOnnx(g: GraphBuilder, input: string): { grid: string; pooled: string } {
    const conv = (x: string, c: Conv, name: string, scale?: number) => {
      const [k, , cin, cout] = c.W.shape as number[];
      const s = scale ?? 1;
      return g.op(
        'Conv',
        [
          x,
          g.initializer(`${name}/W`, { dtype: 'float32', dims: [cout, cin, k, k], data: onnxFilter(c.W, s) }),
          g.initializer(`${name}/b`, {
            dtype: 'float32',
            dims: [cout],
            data: (c.b.dataSync() as Float32Array).map((v) => Math.fround(v * s)),
          }),
        ],
        { kernel_shape: [k, k], strides: [c.stride, c.stride], pads: [c.pad, c.pad, c.pad, c.pad] },
      );
    };
    return g.scope('cnn', () => {
      // x₁ = relu(conv(pixels))
      let x = g.op('Relu', [conv(input, this.stem, 'stem')]);
      this.stages.forEach((s, i) => {
        const name = `stage${i + 1}`;
        const alpha = (s.alpha.dataSync() as Float32Array)[0];
        // x = relu(shortcut(avgpool(x)) + α·conv2(relu(conv1(x)))), α folded into conv2's W and b
        const branch = conv(g.op('Relu', [conv(x, s.conv1, `${name}/conv1`)]), s.conv2, `${name}/conv2`, alpha);
        const pooled = g.op('AveragePool', [x], { kernel_shape: [2, 2], strides: [2, 2] });
        x = g.op('Relu', [g.op('Add', [conv(pooled, s.shortcut, `${name}/shortcut`), branch])]);
      });
      // grid [B, L, C] = transpose(reshape(x [B, C, h, w], [B, C, L])); pooled = mean over L
      const grid = g.op('Transpose', [g.op('Reshape', [x, g.constInt64([0, this.channels, this.locations])])], {
        perm: [0, 2, 1],
      });
      return { grid, pooled: g.reduce('ReduceMean', grid, [1], false) };
    });
  }
}

/**
 * A tfjs filter [k, k, in, out] as ONNX's [out, in, k, k], each value times `scale`. The product
 * is rounded to float32 as tfjs's Mul would round it, so the folded weights equal α·W in training.
 */
function onnxFilter(W: tf.Variable, scale: number): Float32Array {
  const [kh, kw, cin, cout] = W.shape;
  const src = W.dataSync() as Float32Array;
  const out = new Float32Array(src.length);
  for (let y = 0; y < kh; y++) {
    for (let x = 0; x < kw; x++) {
      for (let i = 0; i < cin; i++) {
        for (let o = 0; o < cout; o++)
          out[((o * cin + i) * kh + y) * kw + x] = Math.fround(src[((y * kw + x) * cin + i) * cout + o] * scale);
      }
    }
  }
  return out;
}
