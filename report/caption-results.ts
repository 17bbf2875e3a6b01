/**
 * bench/caption-heads.ts's report: the paper's Table 1 layout (one row per model and output layer,
 * BLEU-3, BLEU-4, ROUGE-L, CIDEr-D, vocabulary usage and learnable parameters), then the training
 * each row had, then three test images with every model's caption.
 */
import type { CaptionScores } from '../core/metrics/caption-eval.ts';

export interface CaptionRow {
  arch: string;
  head: string;
  learnable: number;
  frozen: number;
  epochs: string;
  steps: number;
  trainMinutes: number;
  /** Best validation BLEU-4 (greedy, ×100) during training. */
  valBleu4?: number;
  scores: CaptionScores;
  decodeSeconds: number;
}

export interface ExampleRow {
  /** Image path relative to the results folder. */
  file: string;
  reference: string;
  /** Caption by model name (`<arch>-<head>`). */
  captions: Record<string, string>;
}

const MODEL_NAMES: Record<string, string> = {
  'show-tell': 'Show and Tell',
  'show-attend-tell': 'Show, Attend and Tell',
};

const pct = (x: number) => (100 * x).toFixed(1);

export function formatResults(r: {
  rows: CaptionRow[];
  examples: ExampleRow[];
  machine: string;
  /** The training budget of every model in words (`20 min`, `until the stopping rule`). */
  budget: string;
  /** The data set's name. @default 'Flickr8k' */
  data?: string;
  beam: number;
  preset: string;
  testImages: number;
  command: string;
  wallMinutes: number;
}): string {
  const relative = (row: CaptionRow) => {
    const base = r.rows.find((x) => x.arch === row.arch && x.head === 'learned');
    return base && base !== row ? ` (${(((row.learnable - base.learnable) / base.learnable) * 100).toFixed(1)}%)` : '';
  };
  const lines = [
    `${r.data ?? 'Flickr8k'} test split (${r.testImages} images, 5 references each), ${r.preset} preset, training ${r.budget} per model, beam ${r.beam}. ` +
      'Scores as coco-caption computes them, on its 0-100 scale; vocabulary usage = distinct words in the generated test captions.',
    '',
    '| model | output layer | learnable params | BLEU-3 | BLEU-4 | ROUGE-L | CIDEr-D | vocabulary usage | rare words (< 100 in training) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.rows.map((row) => {
      const s = row.scores;
      return `| ${MODEL_NAMES[row.arch] ?? row.arch} | \`${row.head}\` | ${row.learnable.toLocaleString('en')}${relative(row)} | ${pct(s.bleu3)} | ${pct(s.bleu4)} | ${pct(s.rougeL)} | ${(100 * s.ciderD).toFixed(1)} | ${s.vocab.distinctWords} | ${s.vocab.rare ? `${pct(s.vocab.rare.share)}%` : '—'} |`;
    }),
    '',
    '| model | output layer | epochs | steps | training minutes | best val BLEU-4 (greedy) | test decoding (s) |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...r.rows.map(
      (row) =>
        `| ${row.arch} | \`${row.head}\` | ${row.epochs} | ${row.steps} | ${row.trainMinutes.toFixed(1)} | ${row.valBleu4 === undefined ? '—' : row.valBleu4.toFixed(2)} | ${row.decodeSeconds.toFixed(1)} |`,
    ),
    '',
    "Examples (test images; the first reference caption, then each model's):",
    '',
    ...r.examples.flatMap((ex) => [
      `![${ex.file}](${ex.file})`,
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
