import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { tensorValue } from '../onnx-values.ts';
import { registerHead } from './registry.ts';
import { matrixColumns } from './target-matrix.ts';
import { addBiasOver } from '../layers/bias-add.ts';

/** The usual output layer: softmax(f W + b) with W [d, |V|] and b learned. */
registerHead({
  name: 'learned',
  summary: 'W and b learned (the baseline)',
  frozen: false,
  options: z.strictObject({}),
  targetMatrix: matrixColumns('the learned output matrix W'),
  build(ctx) {
    const W = ctx.params.variable('head/W', [ctx.inputDim, ctx.vocabSize], { kind: 'glorot-uniform' });
    const b = ctx.params.variable('head/b', [ctx.vocabSize], { kind: 'zeros' });
    return {
      name: 'learned',
      logits: (f) => tf.tidy(() => addBiasOver(tf.matMul(f, W), b)),
      toOnnx: (g, f) => g.op('Gemm', [f, g.initializer('W', tensorValue(W)), g.initializer('b', tensorValue(b))]),
      describe: () => ({ name: 'learned' }),
    };
  },
});
