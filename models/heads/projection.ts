import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import type { HeadContext } from './types.ts';

/**
 * Heads that score against the input embedding need f in the embedding's space. When the decoder's
 * output size d differs from the embedding size e they learn a projection P [d, e] (Press & Wolf).
 */
export interface EmbeddingProjection {
  /** e, the size of the projected vector. */
  readonly size: number;
  apply(f: tf.Tensor2D): tf.Tensor2D;
  toOnnx(g: GraphBuilder, f: string): string;
}

export function embeddingProjection(ctx: HeadContext): EmbeddingProjection {
  const e = ctx.embedding.shape[1] as number;
  if (ctx.inputDim === e) {
    return { size: e, apply: (f) => f, toOnnx: (_g, f) => f };
  }
  const P = ctx.params.variable('head/P', [ctx.inputDim, e], { kind: 'glorot-uniform' });
  return {
    size: e,
    apply: (f) => tf.matMul(f, P),
    toOnnx: (g, f) => g.op('MatMul', [f, g.initializer('P', tensorValue(P))]),
  };
}
