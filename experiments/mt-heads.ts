import { basename, join, resolve } from 'node:path';
import { headNames, resolveArchConfig } from '../models/index.ts';
import { collectReport } from '../report/collect.ts';
import { writeReport } from '../report/write-report.ts';
import { reportClaims } from './claims/report-claims.ts';
import { parsePair, resolveDataSource } from './data-sources.ts';
import { type CollectedRun, DEFAULT_TEST_BEAM } from '../report/collect-run.ts';
import {
  describeBudget,
  finishedGridRuns,
  gridBudget,
  gridRuns,
  type GridRun,
  type GridSpec,
  trainGrid,
} from './grid.ts';
import {
  asCollected,
  keepReportedRuns,
  readReportedRuns,
  type ReportedRuns,
  rowMismatch,
  type WantedRun,
} from './reported-runs.ts';
import { getExecutor } from './executors/index.ts';
import { budgetSuffix } from './side-by-side.ts';
import { checkArch, type ExperimentDefinition, type ExperimentOptions, registerExperiment } from './registry.ts';

const DEFAULTS = {
  arch: 'rnn-attn',
  heads: ['learned', 'tied', 'fixed-uniform', 'fixed-l2', 'hadamard'],
  preset: 'small',
  out: 'runs/experiments/mt-heads',
  beam: DEFAULT_TEST_BEAM,
};

/**
 * The paper's translation experiment (its Tables 2 and 3) on this machine: every output head on
 * every language pair under one training budget and seed, exported, scored on the test set with
 * beam search, and compared in one report.
 */
const MT_HEADS: ExperimentDefinition = {
  name: 'mt-heads',
  summary: 'train every head on every language pair under one time budget, export, score test BLEU, write the report',
  inputKind: 'tokens',
  archList: false,
  data: 'multi30k',
  defaults: DEFAULTS,
  gridAxes: true,
  async run(options: ExperimentOptions) {
    if (options.budgetMinutes !== undefined && !(options.budgetMinutes > 0))
      throw new RangeError(`budgetMinutes must be a positive number, got ${options.budgetMinutes}`);
    if (options.maxEpochs !== undefined && !(Number.isInteger(options.maxEpochs) && options.maxEpochs > 0))
      throw new RangeError(`maxEpochs must be a positive integer, got ${options.maxEpochs}`);
    const budget = gridBudget(options);
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    const arch = options.arch ?? DEFAULTS.arch;
    const preset = options.preset ?? DEFAULTS.preset;
    // An unknown architecture or preset, or one that does not translate, is refused (with the known ones) before any
    // data is read.
    checkArch(MT_HEADS, arch);
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
    const reportDir = resolve(options.reportOut ?? join(out, 'report'));
    const trainFlags = options.trainFlags ?? [];
    const spec = {
      out,
      dataDir: source.dir,
      arch,
      preset,
      seed: options.seed,
      seeds: options.seeds,
      budgetMinutes: options.budgetMinutes,
      maxEpochs: options.maxEpochs,
      maxUpdates: options.maxUpdates,
      pairs,
      heads,
      trainFlags,
      ...(options.jobs === undefined ? {} : { jobs: options.jobs }),
      log,
    };
    const beam = options.beam ?? DEFAULTS.beam;
    const committed = await readReportedRuns(reportDir);
    const kept = keptRuns(spec, { beam, trainFlags }, committed, log);
    const skip = new Set(kept.keys());
    const grid = gridRuns(spec);
    const executor = getExecutor(options.executor ?? 'local');
    if (executor.name !== 'local' && !options.reportOnly && options.reportArgv === undefined)
      throw new Error(`the ${executor.name} executor needs the command that reports the grid (reportArgv)`);
    // Only the finished runs are reported, in the grid's order; when training here, trainGrid finishes them all.
    let finished: Set<string>;
    if (options.reportOnly) {
      finished = new Set([...skip, ...(await finishedGridRuns({ ...spec, skip })).map((r) => r.dir)]);
    } else {
      const trained = await trainGrid(
        { ...spec, skip },
        { executor, schedulerFlags: options.sbatch ?? [], reportArgv: options.reportArgv ?? [] },
      );
      if (trained.outcome.kind === 'submitted')
        return { runDirs: grid.map((r) => r.dir), summary: trained.outcome.summary };
      finished = new Set(trained.runs.map((r) => r.dir));
    }
    const reported = grid.filter((r) => finished.has(r.dir));
    if (reported.length === 0) throw new Error(`no run of ${out} has finished yet: nothing to report`);
    const missing = grid.length - reported.length;
    const report = await collectReport(
      reported.map((r) => r.dir),
      {
        title: `mt-heads${arch === DEFAULTS.arch ? '' : ` (${arch})`}: ${heads.join(', ')} on ${pairs.map((p) => `${p.src}→${p.tgt}`).join(', ')} (${basename(source.dir)}), ${describeBudget(budget)} per run${missing === 0 ? '' : `; ${reported.length} of ${grid.length} runs finished so far`}`,
        beam,
        parityTolerance: options.parityTolerance,
        exportDirFor: (runDir) => join(out, 'artifacts', basename(runDir)),
        reported: (runDir) => kept.get(runDir),
        earlier: (id) => committed.rows.get(id),
        log,
      },
    );
    // Each row records the flags its run was trained with, so a later checkout reuses it only for the same grid.
    const runs = report.runs.map((r) => ({ ...r, training: { ...r.training, trainFlags } }));
    const withFlags = { ...report, runs };
    const written = await writeReport(withFlags, reportDir, reportClaims(withFlags));
    log(`report: ${written.html}`);
    return { runDirs: reported.map((r) => r.dir), summary: written.html, report: written };
  },
};
registerExperiment(MT_HEADS);

/**
 * The grid's runs that have no folder here but a finished row in the committed report (one from another
 * checkout): reused, not trained again (reported-runs.ts).
 */
function keptRuns(
  spec: Omit<GridSpec, 'log'>,
  settings: Pick<WantedRun, 'beam' | 'trainFlags'>,
  { path, rows }: ReportedRuns,
  log: (line: string) => void,
): Map<string, CollectedRun> {
  const budget = gridBudget(spec);
  const { arch, preset } = spec;
  return keepReportedRuns<GridRun, CollectedRun>(
    gridRuns(spec),
    path,
    (run) => {
      const row = rows.get(basename(run.dir));
      if (row === undefined) return undefined;
      const mismatch = rowMismatch(
        row,
        { arch, preset, head: run.head, seed: run.seed, src: run.src, tgt: run.tgt, ...settings },
        budget,
      );
      if (mismatch !== null) return { mismatch };
      return {
        kept: asCollected(row),
        summary: `${row.training.epochs} epochs, test BLEU ${row.test.bleu.toFixed(2)}`,
      };
    },
    log,
  );
}
