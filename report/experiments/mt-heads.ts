import { basename, join, resolve } from 'node:path';
import { headNames, resolveArchConfig } from '../../models/index.ts';
import { collectReport } from '../collect.ts';
import { writeReport } from '../write-report.ts';
import { parsePair, resolveDataSource } from './data-sources.ts';
import { describeBudget, gridBudget, trainGrid } from './grid.ts';
import { budgetSuffix } from './side-by-side.ts';
import { type ExperimentOptions, registerExperiment } from './registry.ts';

const DEFAULTS = {
  arch: 'rnn-attn',
  heads: ['learned', 'tied', 'fixed-uniform', 'fixed-l2', 'hadamard'],
  preset: 'small',
  out: 'runs/experiments/mt-heads',
};

/**
 * The paper's translation experiment (its Tables 2 and 3) on this machine: every output head on
 * every language pair under one training budget and seed, exported, scored on the test set with
 * beam search, and compared in one report.
 */
registerExperiment({
  name: 'mt-heads',
  summary: 'train every head on every language pair under one time budget, export, score test BLEU, write the report',
  defaults: DEFAULTS,
  async run(options: ExperimentOptions) {
    if (options.budgetMinutes !== undefined && !(options.budgetMinutes > 0))
      throw new RangeError(`budgetMinutes must be a positive number, got ${options.budgetMinutes}`);
    if (options.maxEpochs !== undefined && !(Number.isInteger(options.maxEpochs) && options.maxEpochs > 0))
      throw new RangeError(`maxEpochs must be a positive integer, got ${options.maxEpochs}`);
    const budget = gridBudget(options);
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    const arch = options.arch ?? DEFAULTS.arch;
    const preset = options.preset ?? DEFAULTS.preset;
    // An unknown architecture or preset is refused (with the known ones) before any data is read.
    resolveArchConfig(arch, preset);
    // Each corpus, architecture and kind of budget gets its own default grid, so a toy or convs2s run never
    // lands among the Multi30k rnn-attn runs, nor a converged run among the time-budgeted ones.
    const base = `${arch === DEFAULTS.arch ? DEFAULTS.out : `${DEFAULTS.out}-${arch}`}${budgetSuffix(options)}`;
    const out = resolve(options.out ?? (options.data === 'multi30k' ? base : `${base}-${basename(options.data)}`));
    const source = await resolveDataSource(options.data, out);
    const pairs = (options.pairs ?? source.pairs).map(parsePair);
    const heads = options.heads ?? DEFAULTS.heads;
    if (heads.length === 0) throw new RangeError('mt-heads needs at least one head');
    const unknown = heads.filter((h) => !headNames().includes(h));
    if (unknown.length > 0)
      throw new RangeError(`unknown head(s) ${unknown.join(', ')}; known heads: ${headNames().join(', ')}`);
    const runs = await trainGrid({
      out,
      dataDir: source.dir,
      arch,
      preset,
      seed: options.seed ?? 1,
      budgetMinutes: options.budgetMinutes,
      maxEpochs: options.maxEpochs,
      maxUpdates: options.maxUpdates,
      pairs,
      heads,
      trainFlags: options.trainFlags,
      ...(options.jobs === undefined ? {} : { jobs: options.jobs }),
      log,
    });
    const report = await collectReport(
      runs.map((r) => r.dir),
      {
        title: `mt-heads${arch === DEFAULTS.arch ? '' : ` (${arch})`}: ${heads.join(', ')} on ${pairs.map((p) => `${p.src}→${p.tgt}`).join(', ')} (${basename(source.dir)}), ${describeBudget(budget)} per run`,
        beam: options.beam,
        parityTolerance: options.parityTolerance,
        exportDirFor: (runDir) => join(out, 'artifacts', basename(runDir)),
        log,
      },
    );
    const written = await writeReport(report, resolve(options.reportOut ?? join(out, 'report')));
    log(`report: ${written.html}`);
    return { runDirs: runs.map((r) => r.dir), summary: written.html, report: written };
  },
});
