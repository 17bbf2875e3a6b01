import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { tensorValue } from '../onnx-values.ts';
import { embeddingProjection } from './projection.ts';
import { registerHead } from './registry.ts';
import { sharedEmbeddingRows } from './target-matrix.ts';
import { targetRows } from './target-rows.ts';
import { addBiasOver } from '../layers/bias-add.ts';

/** Press & Wolf: the output matrix is the target input embedding E itself; a learned bias. */
registerHead({
  name: 'tied',
  summary: 'W = the target input embedding (Press & Wolf), learned bias',
  frozen: false,
  options: z.strictObject({}),
  targetMatrix: sharedEmbeddingRows,
  build(ctx) {
    const proj = embeddingProjection(ctx);
    const rows = targetRows(ctx);
    const b = ctx.params.variable('head/b', [ctx.vocabSize], { kind: 'zeros' });
    return {
      name: 'tied',
      logits: (f) => tf.tidy(() => addBiasOver(tf.matMul(proj.apply(f), rows.tensor(), false, true), b)),
      toOnnx: (g, f, onnx) =>
        // The embedding initializer is shared with the decoder's Gather: stored once.
        g.op('Gemm', [proj.toOnnx(g, f), rows.onnx(g, onnx.embedding), g.initializer('b', tensorValue(b))], {
          transB: 1,
        }),
      describe: () => ({ name: 'tied' }),
    };
  },
});
