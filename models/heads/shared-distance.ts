import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { registerHead } from './registry.ts';
import { sharedHead } from './shared-normalised.ts';
import { sharedEmbeddingRows } from './target-matrix.ts';

/**
 * Negative squared distance up to a per-row constant: -½||x - w_j||² = x·w_j - ½||w_j||² - ½||x||²;
 * the last term is the same for every word and cancels in the softmax, so scores are x·w_j - ½||w_j||².
 */
registerHead({
  name: 'shared-distance',
  summary: 'scores = f·w - ½||w||² over the shared embedding (a distance)',
  frozen: false,
  options: z.strictObject({}),
  targetMatrix: sharedEmbeddingRows,
  build: (ctx) =>
    sharedHead(ctx, {
      name: 'shared-distance',
      learnedBias: false,
      derivedBias: (E) => tf.mul(tf.sum(tf.square(E), 1), -0.5),
    }),
});
