/**
 * The README's captioning results under a time budget: `frost experiment caption-heads` (experiments/
 * caption-heads.ts) with `--budget-minutes`, every captioning architecture (the experiment's default), each
 * with the `learned` and the `fixed-uniform` output layer, trained on Flickr8k, exported and scored on the test
 * split with beam search.
 * Writes results.json and results.md (the paper's Table 1 layout, plus three example images with every
 * model's caption) to <out>/report and prints the table.
 *
 *   npm run bench:caption -- --minutes 60
 *
 * Finished runs are reused and unfinished ones resumed, as for the experiment; a run whose budget is used
 * up is not trained again.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { getExperiment } from '../experiments/index.ts';
import { REPO_ROOT, resolveDataRoot } from '../train/data/paths.ts';
import { archHelp, archsReading } from './archs.ts';

const USAGE = `
npm run bench:caption [-- --minutes 60] [--archs A,B] [--heads learned,fixed-uniform] [--preset small] [--beam 10]
                      [--data DIR] [--val-images 500] [--out runs/bench-caption-heads] [--seed 1]`;

const captionHeads = getExperiment('caption-heads');
const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '60' },
    /** Captioning architectures, comma-separated; default: the experiment's (every one registered). */
    archs: { type: 'string' },
    heads: { type: 'string', default: captionHeads.defaults.heads.join(',') },
    preset: { type: 'string', default: captionHeads.defaults.preset },
    beam: { type: 'string', default: String(captionHeads.defaults.beam) },
    data: { type: 'string' },
    'val-images': { type: 'string', default: '500' },
    out: { type: 'string', default: 'runs/bench-caption-heads' },
    seed: { type: 'string', default: '1' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(archHelp(USAGE, '--archs', archsReading('image'), true));
  process.exit(0);
}

const result = await captionHeads.run({
  data: resolve(args.data ?? join(resolveDataRoot() ?? join(REPO_ROOT, 'data'), 'flickr8k')),
  budgetMinutes: Number(args.minutes),
  arch: args.archs,
  heads: args.heads!.split(','),
  preset: args.preset,
  beam: Number(args.beam),
  seed: Number(args.seed),
  out: resolve(args.out!),
  trainFlags: ['--val-sentences', args['val-images']!],
});
process.stdout.write(await readFile(result.summary, 'utf8'));
