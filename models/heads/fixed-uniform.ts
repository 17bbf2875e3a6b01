import { z } from 'zod';
import { streamKey, uniformMatrix } from '../../core/random.ts';
import { frozenDenseHead } from './fixed-dense.ts';
import { seededUniformMatrixOnnx } from './seeded-matrix-onnx.ts';
import { registerHead } from './registry.ts';
import { matrixColumns } from './target-matrix.ts';

/**
 * Every cell of W uniform in [-limit, limit] (the paper's [-10, 10]), frozen from the start, no bias.
 * Exported as its stream key plus a subgraph that regenerates W bit for bit.
 */
registerHead({
  name: 'fixed-uniform',
  summary: 'W frozen, uniform in [-10, 10], no bias',
  frozen: true,
  options: z.strictObject({
    /** Cells are uniform in [-limit, limit]. */
    limit: z.number().positive().default(10),
  }),
  targetMatrix: matrixColumns('the frozen uniform random matrix, regenerated from the seed'),
  build(ctx, options) {
    const key = streamKey(ctx.seed, 'fixed-uniform');
    const targets = uniformMatrix(key, ctx.vocabSize, ctx.inputDim, -options.limit, options.limit);
    const spec = { key, rows: ctx.vocabSize, cols: ctx.inputDim, lo: -options.limit, hi: options.limit };
    return frozenDenseHead(
      ctx,
      'fixed-uniform',
      targets,
      () => ({ seed: ctx.seed, limit: options.limit }),
      (g) => seededUniformMatrixOnnx(g, spec),
    );
  },
});
