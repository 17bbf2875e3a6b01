/**
 * Trains one translation model per output head under the same time budget, side by side (so they
 * share the machine's noise), exports each to ONNX, scores Multi30k test2016 with beam 5 through
 * onnxruntime-node, and writes the report (report.md, report.html, report.json) to <out>/report.
 * A thin wrapper over `frost experiment mt-heads` (experiments/mt-heads.ts) for one pair:
 *
 *   node --import tsx bench/mt-heads.ts --minutes 30 --heads learned,fixed-l2 --src de --tgt en
 *
 * Finished runs are reused and unfinished ones resumed: rerunning the command only redoes what is missing.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { getExperiment } from '../experiments/index.ts';
import { initBackend } from '../train/backend/select.ts';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    heads: { type: 'string', default: 'learned,fixed-l2' },
    src: { type: 'string', default: 'de' },
    tgt: { type: 'string', default: 'en' },
    preset: { type: 'string', default: 'small' },
    beam: { type: 'string', default: '5' },
    out: { type: 'string', default: 'runs/bench-mt-heads' },
    seed: { type: 'string', default: '1' },
    data: { type: 'string', default: 'multi30k' },
  },
});

await initBackend({ quiet: true });
const started = Date.now();
const result = await getExperiment('mt-heads').run({
  data: args.data!,
  pairs: [`${args.src}-${args.tgt}`],
  heads: args.heads!.split(','),
  budgetMinutes: Number(args.minutes),
  preset: args.preset,
  seed: Number(args.seed),
  beam: Number(args.beam),
  out: args.out,
});
if (!result.report) throw new Error('mt-heads wrote no report');
const markdown = await readFile(result.report.markdown, 'utf8');
// The report's first sections (the verdicts; BLEU, the paper's claim, parameters) are what this bench is run for.
const firstSection = markdown.split('\n## ').slice(0, 3).join('\n## ');
process.stdout.write(
  `${firstSection.trim()}\n\n${((Date.now() - started) / 60000).toFixed(1)} min wall; full report: ${result.report.html}\n`,
);
