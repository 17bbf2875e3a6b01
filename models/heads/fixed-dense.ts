import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { HeadContext, OutputHead } from './types.ts';

/**
 * Shared body of the heads whose target vectors are a frozen dense matrix with no bias: the matrix
 * is built once from the seed, kept as a plain tensor (no gradient, no optimiser state), and scored
 * as f · targetsᵀ.
 */
export function frozenDenseHead(
  ctx: HeadContext,
  name: string,
  /** The target vectors, row-major [|V|, d]. */
  targets: Float32Array,
  describe: () => Record<string, unknown>,
): OutputHead {
  const { vocabSize: V, inputDim: d } = ctx;
  // Training multiplies by the [d, |V|] layout so the forward pass is a plain MatMul.
  const W = ctx.params.constant('head/W', tf.tidy(() => tf.transpose(tf.tensor2d(targets, [V, d]))));
  return {
    name,
    logits: (f) => tf.matMul(f, W),
    toOnnx: (g: GraphBuilder, f: string) =>
      g.op('Gemm', [f, g.initializer('targets', { dtype: 'float32', dims: [V, d], data: targets })], { transB: 1 }),
    describe: () => ({ name, ...describe() }),
  };
}
