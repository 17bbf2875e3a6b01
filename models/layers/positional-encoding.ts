import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import type { ParamStore } from '../params.ts';

export type PositionKind = 'sinusoidal' | 'sinusoidal-fairseq' | 'learned';

/**
 * fairseq's padding index (`<pad>` = 1 in every fairseq dictionary): its SinusoidalPositionalEmbedding numbers the
 * tokens from padding_idx + 1 (utils.make_positions), so the first token is at position 2.
 */
export const FAIRSEQ_FIRST_POSITION = 2;

/**
 * Token positions as vectors added to the embeddings. Sinusoidal (Vaswani et al.): the first half of
 * the vector is sin(p·ω_i), the second cos(p·ω_i), ω_i = 10000^(−2i/d) (the concatenated layout of
 * tensor2tensor and fairseq, a fixed permutation of the paper's interleaved one); no parameters and
 * no length limit, computed from the position in both tfjs and the graphs. Learned: a table of
 * `maxPositions` rows (BERT, fairseq's --learned-pos); a longer sequence is refused.
 *
 * `sinusoidal-fairseq` is fairseq's SinusoidalPositionalEmbedding (fairseq/modules/sinusoidal_positional_embedding.py):
 * also sin then cos, but ω_i = exp(−i · log(10000) / (d/2 − 1)) (so the last frequency is exactly 10000⁻¹), computed
 * in float32 as torch does, and the first token at position {@link FAIRSEQ_FIRST_POSITION} (padding_idx + 1). Its
 * table's zero row for padding only ever meets padded positions, which frost masks.
 */
export interface PositionalEncoding {
  kind: PositionKind;
  d: number;
  maxPositions: number;
  /** ω [d/2], float32, the same numbers in tfjs and in the graphs. */
  frequencies: Float32Array;
  /** What the first token's position is (0; fairseq's layout: 2). */
  offset: number;
  table?: tf.Variable;
}

export function createPositionalEncoding(
  p: ParamStore,
  name: string,
  kind: PositionKind,
  d: number,
  maxPositions: number,
): PositionalEncoding {
  if (d % 2 !== 0) throw new RangeError(`positional encoding: the model size must be even, got ${d}`);
  const frequencies = kind === 'sinusoidal-fairseq' ? fairseqFrequencies(d) : frost(d);
  const offset = kind === 'sinusoidal-fairseq' ? FAIRSEQ_FIRST_POSITION : 0;
  const table =
    kind === 'learned'
      ? p.variable(`${name}/table`, [maxPositions, d], { kind: 'uniform', limit: Math.sqrt(3 / d) })
      : undefined;
  return { kind, d, maxPositions, frequencies, offset, ...(table ? { table } : {}) };
}

/** frost's (and Marian's) ω_i = 10000^(−2i/d). */
function frost(d: number): Float32Array {
  return Float32Array.from({ length: d / 2 }, (_, i) => Math.pow(10000, (-2 * i) / d));
}

/**
 * fairseq's get_embedding: step = log(10000) / (half − 1), ω_i = exp(i · −step), each operation in float32 as torch
 * does it (the scalar step rounded to float32, the product and the exp rounded once each).
 */
export function fairseqFrequencies(d: number): Float32Array {
  const half = d / 2;
  if (half < 2) throw new RangeError(`fairseq's sinusoidal positions need a model size of at least 4, got ${d}`);
  const step = Math.fround(-Math.log(10000) / (half - 1));
  return Float32Array.from({ length: half }, (_, i) => Math.fround(Math.exp(Math.fround(i * step))));
}

/** Vectors [length, d] for positions start, start+1, …. */
export function positionVectors(pe: PositionalEncoding, start: number, length: number): tf.Tensor2D {
  if (pe.table) {
    if (start + length > pe.maxPositions) {
      throw new RangeError(
        `learned positions: position ${start + length - 1} is past the table's ${pe.maxPositions} rows (maxPositions)`,
      );
    }
    return tf.slice(pe.table as tf.Tensor2D, [start, 0], [length, pe.d]);
  }
  const first = start + pe.offset;
  return tf.tidy(() => sinusoids(pe, tf.reshape(tf.range(first, first + length, 1, 'float32'), [length, 1])));
}

/** Sinusoidal vectors [L, d] of positions [L, 1] (float32). */
function sinusoids(pe: PositionalEncoding, positions: tf.Tensor2D): tf.Tensor2D {
  const angles = tf.mul(positions, tf.tensor2d(pe.frequencies, [1, pe.d / 2]));
  return tf.concat([tf.sin(angles), tf.cos(angles)], 1) as tf.Tensor2D;
}

/**
 * Vectors [N, d] for one position per row (int32 [N]): a decoder whose state says where each row is. A learned
 * table is read clamped to its last row, as the graphs read it ({@link positionVectorsOnnx}).
 */
export function positionVectorsAt(pe: PositionalEncoding, positions: tf.Tensor1D): tf.Tensor2D {
  return tf.tidy(() => {
    if (pe.table)
      return tf.gather(pe.table, tf.minimum(positions, tf.scalar(pe.maxPositions - 1, 'int32'))) as tf.Tensor2D;
    const at = tf.cast(pe.offset === 0 ? positions : tf.add(positions, pe.offset), 'float32');
    return sinusoids(pe, tf.reshape(at, [positions.shape[0], 1]));
  });
}

/**
 * The same in a graph: `positions` names an int64 tensor of any shape; the result has one more axis, d. A learned
 * table is read at positions clamped to its last row: a served input longer than the table then decodes (with the
 * last row's vector past it) instead of failing Gather and, with it, every request batched beside it.
 */
export function positionVectorsOnnx(g: GraphBuilder, pe: PositionalEncoding, name: string, positions: string): string {
  if (pe.table) {
    const clamped = g.op('Min', [positions, g.constInt64(pe.maxPositions - 1)]);
    return g.op('Gather', [g.initializer(`${name}/table`, tensorValue(pe.table)), clamped]);
  }
  const omega = g.initializer(`${name}/frequencies`, { dtype: 'float32', dims: [pe.d / 2], data: pe.frequencies });
  const at = pe.offset === 0 ? positions : g.op('Add', [positions, g.constInt64(pe.offset)]);
  const angles = g.op('Mul', [g.unsqueeze(g.cast(at, 'float32'), [-1]), omega]);
  return g.op('Concat', [g.op('Sin', [angles]), g.op('Cos', [angles])], { axis: -1 });
}
