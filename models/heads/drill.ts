import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { SeededRandom } from '../../core/random.ts';
import { seededDropout } from '../layers/dropout.ts';
import { tensorValue } from '../onnx-values.ts';
import { embeddingProjection } from './projection.ts';
import { registerHead } from './registry.ts';
import { targetRows } from './target-rows.ts';
import { addBiasOver } from '../layers/bias-add.ts';

/**
 * Deep residual output layer (Pappas & Henderson, DRILL): the output matrix is a residual MLP over
 * the word embeddings, E⁽ⁱ⁾ = dropout(tanh(E⁽ⁱ⁻¹⁾U⁽ⁱ⁾ + bᵢ)) + E⁽ⁱ⁻¹⁾ + E with E⁽⁰⁾ = E, and the
 * scores are f·E⁽ᵏ⁾ᵀ + b. It depends only on E, so export computes E⁽ᵏ⁾ once and stores it.
 */
registerHead({
  name: 'drill',
  summary: 'W = residual MLP over the shared embedding (DRILL), learned bias',
  frozen: false,
  options: z.strictObject({
    /** Residual layers k of the MLP over the embedding. */
    layers: z.number().int().nonnegative().default(2),
    /** Dropout on the residual layers' hidden units while training; default: the architecture's dropout. */
    dropout: z.number().min(0).lt(1).optional(),
  }),
  // No target matrix to read: the output matrix is computed from E through the residual layers.
  build(ctx, options) {
    const proj = embeddingProjection(ctx);
    const rows = targetRows(ctx);
    const e = proj.size;
    const layers = Array.from({ length: options.layers }, (_, i) => ({
      U: ctx.params.variable(`head/U${i}`, [e, e], { kind: 'glorot-uniform' }),
      b: ctx.params.variable(`head/bU${i}`, [e], { kind: 'zeros' }),
    }));
    const b = ctx.params.variable('head/b', [ctx.vocabSize], { kind: 'zeros' });
    const dropoutRng = new SeededRandom(ctx.seed, 'drill-dropout');
    const rate = options.dropout ?? ctx.dropout;

    const outputMatrix = (training: boolean): tf.Tensor2D =>
      tf.tidy(() => {
        const E = rows.tensor();
        let Ei: tf.Tensor2D = E;
        for (const { U, b: bu } of layers) {
          let hidden = tf.tanh(tf.add(tf.matMul(Ei, U), bu)) as tf.Tensor2D;
          // The model's own dropout op: one fused kernel on wasm, where tf.dropout draws its mask in JS.
          if (training && rate > 0) hidden = seededDropout(hidden, rate, dropoutRng.nextUint32());
          Ei = tf.add(tf.add(hidden, Ei), E) as tf.Tensor2D;
        }
        return Ei;
      });

    return {
      name: 'drill',
      logits: (f, training) =>
        tf.tidy(() => addBiasOver(tf.matMul(proj.apply(f), outputMatrix(training), false, true), b)),
      toOnnx(g, f) {
        const W = outputMatrix(false);
        const name = g.initializer('W', tensorValue(W));
        W.dispose();
        return g.op('Gemm', [proj.toOnnx(g, f), name, g.initializer('b', tensorValue(b))], { transB: 1 });
      },
      describe: () => ({
        name: 'drill',
        layers: options.layers,
        ...(options.dropout !== undefined ? { dropout: options.dropout } : {}),
      }),
    };
  },
});
