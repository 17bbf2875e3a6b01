import type { CollectedRun } from '../../report/collect-run.ts';

/** A run as collect-run.ts returns it; `over` replaces fields. */
export function fixtureRun(
  id: string,
  head: string,
  pair: [string, string],
  over: { learnable: number; bleu: number; bytes: number; spearman: number | null },
  more: { arch?: string; training?: Partial<CollectedRun['training']> } = {},
): CollectedRun {
  const [src, tgt] = pair;
  const size = (k: number) => ({
    bytes: Math.round(over.bytes * k),
    gzipBytes: Math.round(over.bytes * k * 0.9),
    sessionCreateMs: 20 * k,
  });
  return {
    id,
    runDir: `/runs/${id}`,
    modelDir: `/runs/artifacts/${id}`,
    arch: more.arch ?? 'rnn-attn',
    preset: 'small',
    head,
    src,
    tgt,
    seed: 1,
    training: {
      epochs: 3,
      steps: 1226,
      minutes: 20.01,
      budgetMinutes: 20,
      bestValBleu: 20.05,
      stopReason: 'time budget of 20 minutes used',
      ...more.training,
    },
    checkpoint: { which: 'best', sha256: 'ab'.repeat(32), step: 1200, epoch: 3 },
    params: {
      learnable: over.learnable,
      frozen: 0,
      generated: 0,
      components: {
        embeddings: 300,
        encoder: 200,
        decoder: 100,
        headLearnable: over.learnable - 600,
        headFrozen: 0,
        headGenerated: 0,
      },
    },
    onnx: { fp32: size(1), fp16: size(0.5), int8: size(0.27) },
    latency: {
      beam: 5,
      threads: 1,
      batch1Ms: 12.34,
      batch1Sentences: 10,
      batch64Ms: 456.7,
      batch64Size: 64,
      batch64Batches: 3,
      loadAverage: 1.5,
    },
    test: {
      split: 'test2016',
      sentences: 1000,
      beam: 5,
      bleu: over.bleu,
      bleuSignature: 'nrefs:1|case:lc|eff:no|tok:13a|smooth:exp',
      chrf: over.bleu + 30,
      chrfpp: over.bleu + 28,
      vocabUsage: 812,
      refVocabUsage: 1500,
      rareRate: 0.0123,
      refRareRate: 0.05,
      words: 12000,
    },
    matrix: {
      kind: head === 'learned' ? 'learned' : 'frozen',
      description: 'test matrix',
      words: 3,
      dim: 2,
      spearman: over.spearman,
      points: [
        { freq: 1, norm: 0.5 },
        { freq: 10, norm: 1 },
        { freq: 100, norm: 2 },
      ],
      pairs: [
        { a: 'dog', b: 'puppy', related: true, cosine: 0.61 },
        { a: 'dog', b: 'shirt', related: false, cosine: null },
      ],
    },
  };
}
