import * as tf from '@tensorflow/tfjs-core';
import { registerHead } from './registry.ts';
import { rowNorms, sharedHead } from './shared-normalised.ts';

/** Shared embedding divided by its squared row norms: w_j / ||w_j||²; learned bias. */
registerHead({
  name: 'shared-sqnorm',
  summary: 'W = E with rows divided by their squared norm, learned bias',
  defaults: {},
  build: (ctx) =>
    sharedHead(ctx, { name: 'shared-sqnorm', learnedBias: true, rowScale: (E) => tf.square(rowNorms(E)) as tf.Tensor2D }),
});
