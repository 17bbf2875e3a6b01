import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { chooseHadamardColumns, hadamardOrder, hadamardRows } from '../../core/hadamard.ts';
import { tensorValue } from '../onnx-values.ts';
import { hadamardScoresOnnx } from './hadamard-onnx.ts';
import { registerHead } from './registry.ts';
import { matrixColumns } from './target-matrix.ts';

/**
 * Hoffer et al.'s fixed Hadamard classifier: target vectors are rows of a Sylvester Hadamard matrix
 * restricted to d columns (see chooseHadamardColumns for why not the first d), f is L2-normalised,
 * and one learned scale sets the softmax temperature. The export computes H's rows with structured
 * ops (hadamard-onnx.ts) and stores only the column numbers, unless asked to store the matrix.
 */
registerHead({
  name: 'hadamard',
  summary: 'W = rows of a Hadamard matrix (frozen, no storage), f L2-normalised, one learned scale',
  frozen: true,
  options: z.strictObject({}),
  targetMatrix: matrixColumns('the frozen Hadamard rows'),
  build(ctx) {
    const { vocabSize: V, inputDim: d } = ctx;
    const n = hadamardOrder(V, d);
    const columns = chooseHadamardColumns(n, d, ctx.seed);
    const targets = hadamardRows(V, columns);
    const W = ctx.params.constant(
      'head/W',
      tf.tidy(() => tf.transpose(tf.tensor2d(targets, [V, d]))),
    );
    const scale = ctx.params.variable('head/scale', [1], { kind: 'constant', value: 1 / Math.sqrt(V) });
    const eps = 1e-12;
    return {
      name: 'hadamard',
      logits: (f) =>
        tf.tidy(() => {
          const norm = tf.sqrt(tf.add(tf.sum(tf.square(f), 1, true), eps));
          return tf.mul(tf.matMul(tf.div(f, norm), W), scale);
        }),
      toOnnx(g, f, onnx) {
        // scores = scale * (f / ||f||) Hᵀ
        const sq = g.reduce('ReduceSum', g.op('Mul', [f, f]), [1], true);
        const norm = g.op('Sqrt', [g.op('Add', [sq, g.constFloat(eps)])]);
        const unit = g.op('Div', [f, norm]);
        const scores = onnx.storeFrozen
          ? g.op('Gemm', [unit, g.initializer('targets', { dtype: 'float32', dims: [V, d], data: targets })], {
              transB: 1,
            })
          : hadamardScoresOnnx(g, unit, { rows: V, order: n, columns });
        return g.op('Mul', [scores, g.initializer('scale', tensorValue(scale))]);
      },
      generatedParams: (storeFrozen) => (storeFrozen ? 0 : V * d),
      describe: () => ({ name: 'hadamard', seed: ctx.seed, order: n, columns: Array.from(columns) }),
    };
  },
});
