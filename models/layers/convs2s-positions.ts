import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import type { ParamStore } from '../params.ts';

/**
 * ConvS2S's learned absolute position embeddings (Gehring et al. 2017, §3.1): row t of a [max, e]
 * table is added to the word embedding at position t. Positions past the table reuse its last row,
 * so a decoder that runs longer than the model was built for degrades instead of failing.
 */
export interface Convs2sPositions {
  /** [max, e] */ table: tf.Variable;
  readonly max: number;
}

export function createConvs2sPositions(params: ParamStore, name: string, max: number, dim: number): Convs2sPositions {
  // fairseq draws embeddings from N(0, 0.1); this is the uniform law of the same variance.
  return { table: params.variable(name, [max, dim], { kind: 'uniform', limit: 0.1 * Math.sqrt(3) }), max };
}

/** The embeddings of positions 0..L-1: [L, e]. */
export function convs2sPositionRange(p: Convs2sPositions, L: number): tf.Tensor2D {
  if (L <= p.max) return tf.slice(p.table, [0, 0], [L, -1]) as tf.Tensor2D;
  const idx = tf.minimum(tf.range(0, L, 1, 'int32'), tf.scalar(p.max - 1, 'int32'));
  return tf.gather(p.table, idx) as tf.Tensor2D;
}

/** The embeddings of one position per row: positions int32 [N] → [N, e]. */
export function convs2sPositionsAt(p: Convs2sPositions, positions: tf.Tensor1D): tf.Tensor2D {
  return tf.gather(p.table, tf.minimum(positions, tf.scalar(p.max - 1, 'int32'))) as tf.Tensor2D;
}

/** ONNX: the table as an initializer named `name`, read at int64 `positions` of any shape (clamped to the table). */
export function convs2sPositionsOnnx(g: GraphBuilder, p: Convs2sPositions, name: string, positions: string): string {
  const clamped = g.op('Min', [positions, g.constInt64(p.max - 1)]);
  return g.op('Gather', [g.initializer(name, tensorValue(p.table)), clamped]);
}
