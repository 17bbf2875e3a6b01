import { registerHead } from './registry.ts';
import { rowNorms, sharedHead } from './shared-normalised.ts';

/**
 * Cosine scores between f and each shared embedding row. Cosines lie in [-1, 1], too flat for a
 * softmax over thousands of words, so a learned scale (a temperature) multiplies them.
 */
registerHead({
  name: 'shared-cosine',
  summary: 'scores = s·cos(f, w) over the shared embedding, learned scale s',
  defaults: { initialScale: 10 },
  build: (ctx, options: { initialScale: number }) =>
    sharedHead(ctx, {
      name: 'shared-cosine',
      learnedBias: false,
      rowScale: rowNorms,
      cosine: { initialScale: options.initialScale },
    }),
});
