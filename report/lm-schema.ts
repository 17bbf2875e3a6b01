import { z } from 'zod';
import { machineSchema } from './schema.ts';

/**
 * `report.json` of language-model runs (`frost report runs/lm-*`): what `frost eval` measures per run
 * (its `eval.json`), the parameters, and where training stopped. Like `report/schema.ts`, every number
 * report.md and report.html show is here; undefined values are null.
 */

const count = z.number().int().nonnegative();
const maybe = z.number().nullable();

const perplexitySchema = z.object({
  tokens: count,
  /** Mean negative log-likelihood per token, in nats. */
  nll: maybe,
  perplexity: maybe,
});

export const lmBinSchema = perplexitySchema.extend({
  /** 1 = the most frequent words. */
  bin: z.number().int().positive(),
  types: count,
  minCount: count,
  maxCount: count,
});

const splitSchema = perplexitySchema.extend({ bins: z.array(lmBinSchema) });

export const lmRunReportSchema = z.object({
  /** The run folder's name ('lm-drill'). */
  id: z.string(),
  runDir: z.string(),
  arch: z.string(),
  preset: z.string(),
  head: z.string(),
  /** The corpus folder or file, or 'default' (Multi30k English + Flickr8k captions). */
  data: z.string(),
  seed: z.number().int(),
  training: z.object({
    epochs: count,
    steps: count,
    minutes: z.number().nonnegative(),
    budgetMinutes: z.number().nullable(),
    stopReason: z.string().nullable(),
  }),
  checkpoint: z.object({ which: z.enum(['best', 'last']), sha256: z.string(), step: count, epoch: count }),
  params: z.object({ learnable: count, frozen: count, generated: count }),
  /** The `learned` run of the same arch, preset and corpus, if the report has one. */
  baseline: z.string().nullable(),
  /** (baseline learnable − learnable) / baseline learnable. */
  learnableDecrease: maybe,
  /** (ppl − baseline ppl) / baseline ppl on test, overall and per bin (negative: lower than `learned`). */
  vsBaseline: z.object({ test: maybe, bins: z.array(maybe) }).nullable(),
  valid: splitSchema,
  test: splitSchema,
});
export type LmRunReport = z.infer<typeof lmRunReportSchema>;

export const lmReportSchema = z.object({
  format: z.literal('frost-lm-report'),
  version: z.literal(1),
  title: z.string(),
  created: z.string(),
  machine: machineSchema,
  settings: z.object({ bins: z.number().int().positive(), checkpoint: z.enum(['best', 'last']) }),
  runs: z.array(lmRunReportSchema),
});
export type LmReport = z.infer<typeof lmReportSchema>;
