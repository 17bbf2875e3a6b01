import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { tensorValue } from '../onnx-values.ts';
import { embeddingProjection } from './projection.ts';
import { targetRows } from './target-rows.ts';
import type { HeadContext, HeadOnnxContext, OutputHead } from './types.ts';
import { addBiasOver } from '../layers/bias-add.ts';

/**
 * The four scorings of "Normalization of Input-output Shared Embeddings in Text Generation Models":
 * each turns the shared embedding E [|V|, e] into an output matrix and a bias. They differ only in
 * that transform, so one builder serves all four head files.
 */
export interface SharedScoring {
  name: string;
  /**
   * The per-row divisor s [|V|, 1] that turns E into the output matrix E / s; absent when the
   * output matrix is E itself.
   */
  rowScale?(E: tf.Tensor2D): tf.Tensor2D;
  /** Whether scores get a learned bias b [|V|]. */
  learnedBias: boolean;
  /** A bias derived from E (the distance scoring's -½||w||²), or null. */
  derivedBias?(E: tf.Tensor2D): tf.Tensor1D;
  /** Whether f is L2-normalised and the scores multiplied by a learned scale (cosine). */
  cosine?: { initialScale: number };
}

const EPS = 1e-6;

function outputMatrix(scoring: SharedScoring, E: tf.Tensor2D): tf.Tensor2D {
  return scoring.rowScale ? (tf.div(E, scoring.rowScale(E)) as tf.Tensor2D) : E;
}

export function rowNorms(E: tf.Tensor2D): tf.Tensor2D {
  return tf.sqrt(tf.add(tf.sum(tf.square(E), 1, true), EPS)) as tf.Tensor2D;
}

export function sharedHead(ctx: HeadContext, scoring: SharedScoring): OutputHead {
  const proj = embeddingProjection(ctx);
  const rows = targetRows(ctx);
  const b = scoring.learnedBias ? ctx.params.variable('head/b', [ctx.vocabSize], { kind: 'zeros' }) : null;
  const scale = scoring.cosine
    ? ctx.params.variable('head/scale', [1], { kind: 'constant', value: scoring.cosine.initialScale })
    : null;

  const logits = (f: tf.Tensor2D): tf.Tensor2D =>
    tf.tidy(() => {
      let x = proj.apply(f);
      if (scale) x = tf.div(x, rowNorms(x));
      // The rows the head scores: all of E, or a compact output layer's kept rows of it.
      const E = rows.tensor();
      let s: tf.Tensor2D = tf.matMul(x, outputMatrix(scoring, E), false, true);
      if (scale) s = tf.mul(s, scale);
      if (b) s = addBiasOver(s, b);
      if (scoring.derivedBias) s = tf.add(s, scoring.derivedBias(E));
      return s;
    });

  /** Stores E / s once (the decoder's lookup multiplies the gathered rows by s) and s beside it. */
  const sharedEmbeddingOnnx = (g: GraphBuilder) => {
    const E = ctx.embedding as tf.Tensor2D;
    if (!scoring.rowScale) {
      const matrix = g.initializer('decoder/embedding', tensorValue(E));
      return { matrix, lookup: (ids: string) => g.op('Gather', [matrix, ids]) };
    }
    const [W, s] = tf.tidy(() => {
      const scale = scoring.rowScale!(E);
      return [tf.div(E, scale), scale];
    });
    const matrix = g.initializer('decoder/embedding', tensorValue(W));
    const rowScale = g.initializer('decoder/embedding_row_scale', tensorValue(s));
    tf.dispose([W, s]);
    // e = (E / s)[ids] * s[ids]
    return {
      matrix,
      lookup: (ids: string) => g.op('Mul', [g.op('Gather', [matrix, ids]), g.op('Gather', [rowScale, ids])]),
    };
  };

  const toOnnx = (g: GraphBuilder, f: string, onnx: HeadOnnxContext): string => {
    // The normalisation of E was folded into the shared initializer (sharedEmbeddingOnnx), so
    // serving does no per-request work on E and stores it once.
    const derived = scoring.derivedBias ? tf.tidy(() => scoring.derivedBias!(rows.tensor())) : null;
    // One bias initializer: the learned bias, the derived one, or their sum.
    const bias = b && derived ? tf.add(b, derived) : (derived ?? b);
    let x = proj.toOnnx(g, f);
    if (scale) {
      const sq = g.reduce('ReduceSum', g.op('Mul', [x, x]), [1], true);
      x = g.op('Div', [x, g.op('Sqrt', [g.op('Add', [sq, g.constFloat(EPS)])])]);
    }
    const inputs = [x, rows.onnx(g, onnx.embedding)];
    if (bias && !scale) inputs.push(g.initializer('bias', tensorValue(bias)));
    let s = g.op('Gemm', inputs, { transB: 1 });
    if (scale) {
      s = g.op('Mul', [s, g.initializer('scale', tensorValue(scale))]);
      if (bias) s = g.op('Add', [s, g.initializer('bias', tensorValue(bias))]);
    }
    if (bias && bias !== b) bias.dispose();
    if (derived && derived !== bias) derived.dispose();
    return s;
  };

  return { name: scoring.name, logits, toOnnx, sharedEmbeddingOnnx, describe: () => ({ name: scoring.name }) };
}
