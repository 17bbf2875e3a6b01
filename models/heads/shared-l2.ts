import { z } from 'zod';
import { registerHead } from './registry.ts';
import { rowNorms, sharedHead } from './shared-normalised.ts';
import { sharedEmbeddingRows } from './target-matrix.ts';

/** Shared embedding with L2-normalised rows as output matrix: w_j / ||w_j||; learned bias. */
registerHead({
  name: 'shared-l2',
  summary: 'W = E with rows L2-normalised, learned bias',
  frozen: false,
  options: z.strictObject({}),
  targetMatrix: sharedEmbeddingRows,
  build: (ctx) => sharedHead(ctx, { name: 'shared-l2', learnedBias: true, rowScale: rowNorms }),
});
