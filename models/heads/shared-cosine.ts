import { z } from 'zod';
import { registerHead } from './registry.ts';
import { rowNorms, sharedHead } from './shared-normalised.ts';
import { sharedEmbeddingRows } from './target-matrix.ts';

/**
 * Cosine scores between f and each shared embedding row. Cosines lie in [-1, 1], too flat for a
 * softmax over thousands of words, so a learned scale (a temperature) multiplies them.
 */
registerHead({
  name: 'shared-cosine',
  summary: 'scores = s·cos(f, w) over the shared embedding, learned scale s',
  frozen: false,
  options: z.strictObject({
    /** The learned temperature's starting value. */
    initialScale: z.number().positive().default(10),
  }),
  targetMatrix: sharedEmbeddingRows,
  build: (ctx, options) =>
    sharedHead(ctx, {
      name: 'shared-cosine',
      learnedBias: false,
      rowScale: rowNorms,
      cosine: { initialScale: options.initialScale },
    }),
});
