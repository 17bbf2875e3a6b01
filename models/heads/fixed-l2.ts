import { z } from 'zod';
import { l2NormaliseRows, streamKey, uniformMatrix } from '../../core/random.ts';
import { frozenDenseHead } from './fixed-dense.ts';
import { l2NormaliseRowsOnnx, seededUniformMatrixOnnx } from './seeded-matrix-onnx.ts';
import { registerHead } from './registry.ts';
import { matrixColumns } from './target-matrix.ts';

/**
 * Random target vectors (uniform in [-1, 1] per cell) divided by their L2 norm, frozen, no bias.
 * Exported as its stream key plus a subgraph that regenerates and normalises them.
 */
registerHead({
  name: 'fixed-l2',
  summary: 'W frozen, random rows of unit L2 norm, no bias',
  frozen: true,
  options: z.strictObject({}),
  targetMatrix: matrixColumns('the frozen unit-norm random matrix, regenerated from the seed'),
  build(ctx) {
    const key = streamKey(ctx.seed, 'fixed-l2');
    const raw = uniformMatrix(key, ctx.vocabSize, ctx.inputDim, -1, 1);
    const targets = l2NormaliseRows(raw, ctx.vocabSize, ctx.inputDim);
    const spec = { key, rows: ctx.vocabSize, cols: ctx.inputDim, lo: -1, hi: 1 };
    return frozenDenseHead(
      ctx,
      'fixed-l2',
      targets,
      () => ({ seed: ctx.seed }),
      (g) => l2NormaliseRowsOnnx(g, seededUniformMatrixOnnx(g, spec), ctx.inputDim),
    );
  },
});
