import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { HeadContext, OutputHead } from './types.ts';

/**
 * Emits nodes that rebuild the target matrix as a float32 [|V|, d] value, equal to `targets`
 * (see seeded-matrix-onnx.ts); returns its name.
 */
export type RegenerateTargets = (g: GraphBuilder) => string;

/**
 * Shared body of the heads whose target vectors are a frozen dense matrix with no bias: the matrix
 * is built once from the seed, kept as a plain tensor (no gradient, no optimiser state), and scored
 * as f · targetsᵀ. With `regenerate`, the exported graph rebuilds the matrix from its seed instead
 * of storing it, unless the export asks for `storeFrozen`.
 */
export function frozenDenseHead(
  ctx: HeadContext,
  name: string,
  /** The target vectors, row-major [|V|, d]. */
  targets: Float32Array,
  describe: () => Record<string, unknown>,
  regenerate?: RegenerateTargets,
): OutputHead {
  const { vocabSize: V, inputDim: d } = ctx;
  // Training multiplies by the [d, |V|] layout so the forward pass is a plain MatMul.
  const W = ctx.params.constant(
    'head/W',
    tf.tidy(() => tf.transpose(tf.tensor2d(targets, [V, d]))),
  );
  return {
    name,
    logits: (f) => tf.matMul(f, W),
    toOnnx(g, f, onnx) {
      // The regenerated matrix is a constant-folded initializer by the time the session runs, so
      // Gemm with transB reads it in its [|V|, d] layout exactly as it would read a stored one.
      const matrix =
        regenerate !== undefined && !onnx.storeFrozen
          ? regenerate(g)
          : g.initializer('targets', { dtype: 'float32', dims: [V, d], data: targets });
      return g.op('Gemm', [f, matrix], { transB: 1 });
    },
    generatedParams: (storeFrozen) => (regenerate !== undefined && !storeFrozen ? V * d : 0),
    describe: () => ({ name, ...describe() }),
  };
}
