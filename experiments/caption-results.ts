/**
 * bench/caption-heads.ts's report: the paper's Table 1 layout (one row per model and output layer,
 * BLEU-3, BLEU-4, ROUGE-L, CIDEr-D, vocabulary usage and learnable parameters), then the training
 * each row had, the paper's claims judged on them (caption-verdicts.ts), then three test images with every model's
 * caption.
 */
import { z } from 'zod';
import type { CaptionScores } from '../core/metrics/caption-eval.ts';
import { captionVerdictSentences } from './claims/caption-verdicts.ts';
import type { RunBudget } from '../report/run-status.ts';
import { stopKindSchema } from '../report/schema.ts';
import { formatTimedAt, timedApart } from '../report/timed-apart.ts';

/** The results file beside results.md: every number it shows, and what tells its rows' runs apart. */
export const CAPTION_RESULTS_FILE = 'results.json';

const score = z.number();
const count = z.number().int().nonnegative();

const captionScoresSchema = z.object({
  bleu1: score,
  bleu2: score,
  bleu3: score,
  bleu4: score,
  rougeL: score,
  ciderD: score,
  vocab: z.object({
    distinctWords: count,
    totalWords: count,
    rare: z.object({ threshold: count, words: count, share: score, distinct: count }).optional(),
  }),
  count,
}) satisfies z.ZodType<CaptionScores>;

const runBudgetSchema = z.object({
  minutes: z.number().positive().optional(),
  epochs: z.number().int().positive().optional(),
  updates: z.number().int().positive().optional(),
}) satisfies z.ZodType<RunBudget>;

/**
 * A frozen head's test BLEU-4 against the `learned` row of the same architecture, resampled: the paired bootstrap
 * of sacreBLEU's `--paired-bs` (core/metrics/paired-bootstrap.ts) over both runs' per-image coco-caption BLEU
 * statistics, on the verdicts' scale (×100).
 */
export const bleu4IntervalSchema = z.object({
  /** The 95% interval of this row's BLEU-4 minus learned's: the 2.5th and 97.5th percentiles of the resamples. */
  lo: z.number(),
  hi: z.number(),
  /** sacreBLEU's paired-bootstrap p-value. */
  p: z.number(),
  resamples: count,
  seed: count,
  /**
   * The checkpoints (SHA-256) of this row's run and of the learned run it was computed for: a grid that scores one
   * of them again keeps the interval only for the same two.
   */
  checkpoints: z.object({ run: z.string(), learned: z.string() }),
});
export type Bleu4Interval = z.infer<typeof bleu4IntervalSchema>;

export const captionRowSchema = z.object({
  arch: z.string(),
  head: z.string(),
  /**
   * What the run was: its preset, seed, the budget it was trained under (its own config's) and why its trainer
   * stopped (null: it did not record that it finished). A later grid reuses the row for a run whose folder is gone
   * only when these are the grid's (experiments/reported-runs.ts). Absent in results from older frost.
   */
  preset: z.string().optional(),
  seed: z.number().int().optional(),
  budget: runBudgetSchema.optional(),
  stopKind: stopKindSchema.nullable().optional(),
  learnable: count,
  frozen: count,
  /** Epochs trained and why training stopped, in words: `10 (reached 10 epochs)`. */
  epochs: z.string(),
  steps: count,
  trainMinutes: z.number().nonnegative(),
  /** Best validation BLEU-4 (greedy, ×100) during training. */
  valBleu4: z.number().optional(),
  /**
   * Best validation BLEU-4 of the last epochs minus the best before them (report/convergence.ts): whether a run
   * stopped at its budget had flattened. Null with too few epochs; absent in results from older frost.
   */
  lastGain: z.number().nullable().optional(),
  scores: captionScoresSchema,
  /**
   * Frozen heads: the interval of their BLEU-4 against learned's (`bleu4IntervalSchema`); null where the results
   * did not have both runs' test captions. Absent on `learned` rows and in results from before intervals.
   */
  bleu4Interval: bleu4IntervalSchema.nullable().optional(),
  decodeSeconds: z.number().nonnegative(),
  /** When the test images were captioned (ISO 8601), as `decodeSeconds` depends on that session's machine and load. */
  decodedAt: z.string().optional(),
});
export type CaptionRow = z.infer<typeof captionRowSchema>;

export const exampleRowSchema = z.object({
  /** The image's file name in the data set (its test split), which the report links but does not copy. */
  file: z.string(),
  reference: z.string(),
  /** Caption by model name (`<arch>-<head>`). */
  captions: z.record(z.string(), z.string()),
});
export type ExampleRow = z.infer<typeof exampleRowSchema>;

/** results.json. */
export const captionResultsSchema = z.object({
  machine: z.string(),
  /** The grid's budget. */
  budget: runBudgetSchema,
  beam: z.number().int().positive(),
  preset: z.string(),
  /** The data set's name (the test split the rows were scored on). Absent in results from older frost. */
  data: z.string().optional(),
  /** The extra `frost train` flags every run was trained with (`--train-flags`). Absent in results from older frost. */
  trainFlags: z.array(z.string()).optional(),
  rows: z.array(captionRowSchema),
  examples: z.array(exampleRowSchema),
});
export type CaptionResults = z.infer<typeof captionResultsSchema>;

const MODEL_NAMES: Record<string, string> = {
  'show-tell': 'Show and Tell',
  'show-attend-tell': 'Show, Attend and Tell',
};

const pct = (x: number) => (100 * x).toFixed(1);

export function formatResults(r: {
  rows: CaptionRow[];
  examples: ExampleRow[];
  /** Where each example image lies, relative to the report's folder, by file; an image without one is named only. */
  imageLinks?: Record<string, string>;
  machine: string;
  /** The training budget of every model in words (`20 min`, `until the stopping rule`). */
  budget: string;
  /** The data set's name. @default 'Flickr8k' */
  data?: string;
  beam: number;
  preset: string;
  /** The runs read a frozen pretrained encoder (`--encoder`). @default false */
  pretrainedEncoder?: boolean;
  testImages: number;
  /** The grid's runs, when more than the rows: the others have not finished (`--report-only`). */
  gridRuns?: number;
  command: string;
  wallMinutes: number;
}): string {
  const relative = (row: CaptionRow) => {
    const base = r.rows.find((x) => x.arch === row.arch && x.head === 'learned');
    return base && base !== row ? ` (${(((row.learnable - base.learnable) / base.learnable) * 100).toFixed(1)}%)` : '';
  };
  const apart = timedApart(r.rows.map((row) => row.decodedAt));
  const verdicts = captionVerdictSentences(r.rows, {
    data: r.data ?? 'Flickr8k',
    testImages: r.testImages,
    preset: r.preset,
    pretrainedEncoder: r.pretrainedEncoder ?? false,
    budget: r.budget,
    beam: r.beam,
  });
  const lines = [
    `${r.data ?? 'Flickr8k'} test split (${r.testImages} images, 5 references each), ${r.preset} preset, training ${r.budget} per model, beam ${r.beam}. ` +
      'Scores as coco-caption computes them, on its 0-100 scale; vocabulary usage = distinct words in the generated test captions.',
    ...(r.gridRuns === undefined || r.gridRuns === r.rows.length
      ? []
      : ['', `${r.rows.length} of ${r.gridRuns} runs finished so far: the others are not in the tables yet.`]),
    '',
    '| model | output layer | learnable params | BLEU-3 | BLEU-4 | ROUGE-L | CIDEr-D | vocabulary usage | rare words (< 100 in training) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.rows.map((row) => {
      const s = row.scores;
      return `| ${MODEL_NAMES[row.arch] ?? row.arch} | \`${row.head}\` | ${row.learnable.toLocaleString('en')}${relative(row)} | ${pct(s.bleu3)} | ${pct(s.bleu4)} | ${pct(s.rougeL)} | ${(100 * s.ciderD).toFixed(1)} | ${s.vocab.distinctWords} | ${s.vocab.rare ? `${pct(s.vocab.rare.share)}%` : '—'} |`;
    }),
    '',
    `| model | output layer | epochs | steps | training minutes | best val BLEU-4 (greedy) | test decoding (s) |${apart ? ' decoded (UTC) |' : ''}`,
    `|---|---|---:|---:|---:|---:|---:|${apart ? '---|' : ''}`,
    ...r.rows.map(
      (row) =>
        `| ${row.arch} | \`${row.head}\` | ${row.epochs} | ${row.steps} | ${row.trainMinutes.toFixed(1)} | ${row.valBleu4 === undefined ? '—' : row.valBleu4.toFixed(2)} | ${row.decodeSeconds.toFixed(1)} |${apart ? ` ${formatTimedAt(row.decodedAt)} |` : ''}`,
    ),
    ...(apart
      ? [
          '',
          "Rows taken from an earlier session's results keep that session's decoding time, on its machine and load: compare decoding times only among rows decoded together.",
        ]
      : []),
    ...(verdicts.length === 0 ? [] : ['', "The paper's claims here:", '', ...verdicts.map((v) => `- ${v}`)]),
    '',
    "Examples (test images; the first reference caption, then each model's). The images are the data set's, linked where it lay when this was written (`FROST_DATA`), not copied: frost commits no data.",
    '',
    ...r.examples.flatMap((ex) => [
      r.imageLinks?.[ex.file] === undefined ? `\`${ex.file}\`` : `![${ex.file}](${r.imageLinks[ex.file]})`,
      '',
      `- reference: ${ex.reference}`,
      ...Object.entries(ex.captions).map(([model, caption]) => `- \`${model}\`: ${caption}`),
      '',
    ]),
    `Machine: ${r.machine}.`,
    `Command: \`${r.command}\` (${r.wallMinutes.toFixed(1)} min wall for this invocation).`,
  ];
  return lines.join('\n');
}
