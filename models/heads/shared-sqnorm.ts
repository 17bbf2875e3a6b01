import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { registerHead } from './registry.ts';
import { rowNorms, sharedHead } from './shared-normalised.ts';
import { sharedEmbeddingRows } from './target-matrix.ts';

/** Shared embedding divided by its squared row norms: w_j / ||w_j||²; learned bias. */
registerHead({
  name: 'shared-sqnorm',
  summary: 'W = E with rows divided by their squared norm, learned bias',
  frozen: false,
  options: z.strictObject({}),
  targetMatrix: sharedEmbeddingRows,
  build: (ctx) =>
    sharedHead(ctx, {
      name: 'shared-sqnorm',
      learnedBias: true,
      rowScale: (E) => tf.square(rowNorms(E)) as tf.Tensor2D,
    }),
});
