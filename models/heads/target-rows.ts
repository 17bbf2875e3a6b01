import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { HeadContext } from './types.ts';

/** The rows of the target embedding a head scores against, in training and in the exported graph. */
export interface TargetRows {
  /** E [|V|, e], or E's kept rows [K, e] for a compact output layer; call inside the forward pass. */
  tensor(): tf.Tensor2D;
  /** The same rows of the ONNX value `embedding` (the decoder's embedding initializer, or its rescaled copy). */
  onnx(g: GraphBuilder, embedding: string): string;
}

/**
 * For tied, shared-* and drill heads. A compact output layer (`ctx.rowIds`) gathers the kept rows of the one
 * shared variable on every forward pass, so the gradient still reaches E (and, in a joint run, the source side
 * reads the same matrix); the exported graph gathers them from the embedding's initializer, a Gather of two
 * initializers that onnxruntime folds into a constant when the session loads.
 */
export function targetRows(ctx: HeadContext): TargetRows {
  const E = ctx.embedding as tf.Tensor2D;
  const ids = ctx.rowIds;
  if (ids === undefined) return { tensor: () => E, onnx: (_g, embedding) => embedding };
  const index = ctx.params.auxiliary(tf.tensor1d(ids, 'int32')) as tf.Tensor1D;
  return {
    tensor: () => tf.gather(E, index) as tf.Tensor2D,
    onnx: (g, embedding) =>
      g.op('Gather', [embedding, g.constInt64(Array.from(ids), [ids.length], 'rows')], { axis: 0 }),
  };
}
