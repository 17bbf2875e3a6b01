import { z } from 'zod';

/**
 * The seed paper's published numbers that frost's reports print beside their own, as plain data with
 * their source. Only numbers the paper states; frost never computes or adjusts them.
 */
const headScores = z.object({ learned: z.number(), tied: z.number(), fixed: z.number() });

export const paperResultsSchema = z.object({
  table2: z.object({
    source: z.string(),
    /** frost's architecture closest to the paper's model. */
    arch: z.string(),
    data: z.string(),
    /** How the paper's BLEU was computed, as far as it says, and what frost compares it with. */
    scoring: z.string(),
    /** Test BLEU by language pair ('de-en') and the paper's head (learned, tied, fixed random vectors). */
    bleu: z.record(z.string(), headScores),
  }),
  figure2: z.object({
    source: z.string(),
    /** Spearman ρ of target-vector norm and word frequency for the learned output matrices on Multi30k. */
    spearman: z.array(z.number()).min(1),
  }),
  table1: z.object({
    source: z.string(),
    data: z.string(),
    /** Distinct words in the captioners' generated test captions, learned and fixed output layers. */
    vocabularyUsage: z.object({ learned: z.number().int(), fixed: z.number().int() }),
  }),
});
export type PaperResults = z.infer<typeof paperResultsSchema>;

export const PAPER_RESULTS: PaperResults = paperResultsSchema.parse({
  table2: {
    source: "the seed paper's Table 2 (as quoted in issue 21)",
    arch: 'rnn-attn',
    data: 'Multi30k test2016, word-level vocabularies',
    scoring:
      "the paper's BLEU is on its own lower-cased, tokenised Multi30k text; frost's beside it is sacreBLEU 13a, lower-cased, on detokenised output against the raw references, so a few tenths either way are within scorer differences",
    bleu: {
      'de-en': { learned: 33.02, tied: 33.08, fixed: 33.17 },
      'en-de': { learned: 31.63, tied: 31.49, fixed: 32.12 },
    },
  },
  figure2: {
    source: "the seed paper's Figure 2 (Multi30k, as quoted in issue 21)",
    spearman: [0.84, 0.93],
  },
  table1: {
    source: "the seed paper's Table 1 (captioning, as quoted in issue 6)",
    data: 'MSCOCO',
    vocabularyUsage: { learned: 721, fixed: 1378 },
  },
});

/**
 * frost's own earlier, short-budget measurements that converged runs are compared with: the learned
 * target vectors' norm-frequency ρ of the committed 40-minute grid (docs/reports/mt-heads/report.json,
 * every run under one epoch). Keyed by run id; `shortRunSpearman` reads it.
 */
export const SHORT_RUN_SPEARMAN = {
  source: 'docs/reports/mt-heads (40 min per run, under one epoch)',
  /** Complete epochs those runs had trained: only runs trained longer are compared with them. */
  epochs: 0,
  spearman: {
    'de-en-learned': -0.812,
    'de-en-tied': -0.694,
    'en-de-learned': -0.664,
    'en-de-tied': -0.655,
  } as Record<string, number>,
} as const;

/** The short-run ρ of a run with the same id that has trained longer than the short runs, if any. */
export function shortRunSpearman(r: { id: string; training: { epochs: number } }): number | undefined {
  return r.training.epochs > SHORT_RUN_SPEARMAN.epochs ? SHORT_RUN_SPEARMAN.spearman[r.id] : undefined;
}
