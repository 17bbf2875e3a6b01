import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * Everything a training run was started with, saved as `config.json` in the run folder: resuming,
 * exporting and reporting read it and need nothing else.
 */
export const runConfigSchema = z.object({
  task: z.literal('translation').default('translation'),
  arch: z.string(),
  preset: z.string(),
  /** The preset with overrides applied. */
  archConfig: z.record(z.string(), z.unknown()),
  head: z.object({ name: z.string(), options: z.record(z.string(), z.unknown()).default({}) }),
  seed: z.number().int().nonnegative().default(1),
  data: z.object({
    dir: z.string(),
    kind: z.enum(['multi30k', 'plain']),
    src: z.string(),
    tgt: z.string(),
  }),
  tokenizer: z.string().default('multi30k'),
  vocab: z.object({ minFreq: z.number().int().positive().default(2), maxSize: z.number().int().positive().optional() }).default({ minFreq: 2 }),
  lengths: z.object({ maxSrcLen: z.number().int().positive().default(50), maxTgtLen: z.number().int().positive().default(50) }).default({ maxSrcLen: 50, maxTgtLen: 50 }),
  batch: z.object({ maxSentences: z.number().int().positive().default(64), maxTokens: z.number().int().positive().optional() }).default({ maxSentences: 64 }),
  optim: z.object({ learningRate: z.number().positive().default(1e-3), clipNorm: z.number().nonnegative().default(5) }).default({ learningRate: 1e-3, clipNorm: 5 }),
  schedule: z.object({ patience: z.number().int().positive().default(8), decay: z.number().positive().max(1).default(0.8), stopAfter: z.number().int().positive().default(20) }).default({ patience: 8, decay: 0.8, stopAfter: 20 }),
  /** Stop after this many epochs. */
  epochs: z.number().int().positive().optional(),
  /** Stop after this much training time (validation included), summed over resumes. */
  maxMinutes: z.number().positive().optional(),
  /** Save the `last` checkpoint this often inside an epoch too. */
  checkpointMinutes: z.number().positive().default(5),
  /** Validation sentences decoded for BLEU each epoch (the first N of the val split). */
  valSentences: z.number().int().positive().optional(),
});

export type RunConfig = z.infer<typeof runConfigSchema>;
export type RunConfigInput = z.input<typeof runConfigSchema>;

export const RUN_FILES = {
  config: 'config.json',
  srcVocab: 'vocab.src.json',
  tgtVocab: 'vocab.tgt.json',
  metrics: 'metrics.jsonl',
  last: 'checkpoints/last',
  best: 'checkpoints/best',
} as const;

export async function readRunConfig(runDir: string): Promise<RunConfig> {
  const path = join(runDir, RUN_FILES.config);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new Error(`${runDir} is not a frost run folder (no ${RUN_FILES.config})`);
  }
  const parsed = runConfigSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`${path}: invalid run config: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

export async function writeRunConfig(runDir: string, config: RunConfig): Promise<void> {
  await writeFile(join(runDir, RUN_FILES.config), `${JSON.stringify(config, null, 2)}\n`);
}
