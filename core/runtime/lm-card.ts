import { z } from 'zod';
import { subwordSpecSchema } from '../subword/subword-spec.ts';
import { paramCountsSchema, specialsSchema, vocabularySchema } from './model-card.ts';
import { describeIssues } from '../zod-issues.ts';
import { parseCardJson } from './card-json.ts';

/**
 * A language model's card (`task: 'lm'`), in the same model-card.json beside its one graph. A
 * language model has no encoder, so its graphs are one step graph: `token` int64 [rows] and the
 * recurrent state in, `log_probs` [rows, |V|] and `next_<state>` out. Kept apart from the seq2seq
 * card (model-card.ts) so neither schema has fields the other's runtime must ignore.
 */
export const lmCardSchema = z.object({
  format: z.literal('frost-model'),
  version: z.literal(1),
  name: z.string(),
  task: z.literal('lm'),
  arch: z.string(),
  preset: z.string(),
  head: z.object({ name: z.string() }).catchall(z.unknown()),
  target: vocabularySchema,
  specials: specialsSchema,
  tokenizer: z.string(),
  subword: subwordSpecSchema.optional(),
  graphs: z.object({
    step: z.object({
      file: z.string(),
      token: z.string(),
      /** State inputs in order; each has a `next_<name>` output. */
      state: z.array(z.string()).min(1),
      /** Second dimension of every state tensor. */
      stateSize: z.number().int().positive(),
      logProbs: z.string(),
    }),
  }),
  params: paramCountsSchema.extend({ byComponent: z.record(z.string(), z.number().int()) }),
  files: z.record(z.string(), z.object({ bytes: z.number().int(), gzipBytes: z.number().int().optional() })),
  config: z.record(z.string(), z.unknown()),
  metrics: z.record(z.string(), z.number()).default({}),
  created: z.string(),
});

export type LmCard = z.infer<typeof lmCardSchema>;
export type LmCardInput = z.input<typeof lmCardSchema>;

/** Parses an LM card's JSON text; the error names `where`. */
export function parseLmCard(text: string, where: string): LmCard {
  const json = parseCardJson(text, where);
  const parsed = lmCardSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(`${where}: not a valid language-model card (${describeIssues(parsed.error.issues, { max: 5 })})`);
  }
  return parsed.data;
}
