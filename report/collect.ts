import { availableParallelism, cpus } from 'node:os';
import { basename, resolve } from 'node:path';
import { RARE_WORD_THRESHOLD } from '../core/metrics/word-usage.ts';
import { nodeRuntimeVersion } from '../core/runtime/ort-node.ts';
import { bleuInterval, type ComparisonInputs } from './bleu-interval.ts';
import { type CollectedRun, collectRun, DEFAULT_TEST_BEAM } from './collect-run.ts';
import type { TestSegments } from './collect-test.ts';
import { type Report, reportSchema, type RunReport } from './schema.ts';

export interface CollectReportOptions {
  title: string;
  /** @default DEFAULT_TEST_BEAM */
  beam?: number;
  /** @default RARE_WORD_THRESHOLD (100) */
  rareThreshold?: number;
  /** Where to export a run that has no current export; @default `<run>/export` */
  exportDirFor?: (runDir: string) => string | undefined;
  /** The parity bar of the exports the report makes (export/parity.ts); @default 1e-4 */
  parityTolerance?: number;
  /** A run whose folder is gone, as a committed report keeps it (experiments/reported-runs.ts); taken as is. */
  reported?: (runDir: string) => CollectedRun | undefined;
  /**
   * A run's row in the report this one replaces, by run id, whether or not its folder is here: a BLEU interval it
   * holds for the same two checkpoints is kept (bleu-interval.ts).
   */
  earlier?: (id: string) => RunReport | undefined;
  log?: (line: string) => void;
}

/** Runs compare with the `learned` run trained on the same thing: same arch, preset and language pair. */
const comparableKey = (r: CollectedRun) => JSON.stringify([r.arch, r.preset, r.src, r.tgt]);

/**
 * Adds each run's baseline, its learnable-parameter decrease (the paper's Table 3), BLEU difference and the
 * difference's interval (bleu-interval.ts, from the runs' test translations where `inputs` has them). The baseline
 * is the `learned` run of the same seed where there is one, else the first.
 */
export function compareWithBaselines(runs: CollectedRun[], inputs: ComparisonInputs = {}): RunReport[] {
  const baselines = new Map<string, CollectedRun[]>();
  for (const r of runs)
    if (r.head === 'learned') baselines.set(comparableKey(r), [...(baselines.get(comparableKey(r)) ?? []), r]);
  return runs.map((r) => {
    const learned = baselines.get(comparableKey(r)) ?? [];
    const base = learned.find((b) => b.seed === r.seed) ?? learned[0];
    if (!base) return { ...r, baseline: null, learnableDecrease: null, bleuDelta: null, bleuDeltaInterval: null };
    return {
      ...r,
      baseline: base.id,
      learnableDecrease: (base.params.learnable - r.params.learnable) / base.params.learnable,
      bleuDelta: r.test.bleu - base.test.bleu,
      bleuDeltaInterval: bleuInterval(r, base, inputs),
    };
  });
}

export function machineInfo(): Report['machine'] {
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown CPU',
    cores: availableParallelism(),
    node: process.version,
    onnxruntime: nodeRuntimeVersion() ?? 'unknown',
  };
}

/** Runs are named by their folder in tables, charts and chart files: two runs must not share one. */
export function refuseDuplicateNames(runDirs: readonly string[]): void {
  const byName = new Map<string, string>();
  for (const dir of runDirs.map((d) => resolve(d))) {
    const other = byName.get(basename(dir));
    if (other !== undefined)
      throw new Error(
        `${other} and ${dir} are both named '${basename(dir)}': a report names runs by their folder, so give runs distinct folder names`,
      );
    byName.set(basename(dir), dir);
  }
}

/** Collects every run (in the order given) into the data behind a report. */
export async function collectReport(runDirs: string[], opts: CollectReportOptions): Promise<Report> {
  if (runDirs.length === 0) throw new Error('a report needs at least one run folder');
  refuseDuplicateNames(runDirs);
  const beam = opts.beam ?? DEFAULT_TEST_BEAM;
  const rareThreshold = opts.rareThreshold ?? RARE_WORD_THRESHOLD;
  const runs: CollectedRun[] = [];
  const segments = new Map<string, TestSegments>();
  for (const dir of runDirs) {
    const runDir = resolve(dir);
    const kept = opts.reported?.(runDir);
    if (kept) {
      runs.push(kept);
      continue;
    }
    opts.log?.(`collecting ${runDir}`);
    const collected = await collectRun(runDir, {
      beam,
      rareThreshold,
      exportDir: opts.exportDirFor?.(runDir),
      parityTolerance: opts.parityTolerance,
      log: opts.log,
    });
    runs.push(collected.run);
    segments.set(collected.run.id, collected.segments);
  }
  return reportSchema.parse({
    format: 'frost-report',
    version: 1,
    title: opts.title,
    created: new Date().toISOString(),
    machine: machineInfo(),
    settings: { beam, rareThreshold },
    runs: compareWithBaselines(runs, { segments, ...(opts.earlier ? { earlier: opts.earlier } : {}) }),
  });
}
