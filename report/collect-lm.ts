import { basename, resolve } from 'node:path';
import { currentLmEvaluation, type LmEvaluation } from '../train/lm/lm-eval-run.ts';
import type { PerplexityReport } from '../train/lm/lm-evaluate.ts';
import { readCheckpointInfo, RunFolder, type CheckpointName } from '../train/run-folder.ts';
import { machineInfo, refuseDuplicateNames } from './collect.ts';
import { type LmReport, lmReportSchema, type LmRunReport } from './lm-schema.ts';

export interface CollectLmReportOptions {
  title: string;
  /** Frequency bins, as `frost eval --bins`. @default 5 */
  bins?: number;
  /** @default 'best' */
  checkpoint?: CheckpointName;
  log?: (line: string) => void;
}

/** JSON has no NaN: a bin without test tokens has a null perplexity. */
const finite = (v: number) => (Number.isFinite(v) ? v : null);
function split(p: PerplexityReport): LmRunReport['test'] {
  const ppl = (x: { tokens: number; nll: number; perplexity: number }) => ({
    tokens: x.tokens,
    nll: finite(x.nll),
    perplexity: finite(x.perplexity),
  });
  return {
    ...ppl(p),
    bins: p.bins.map((b) => ({ ...ppl(b), bin: b.bin, types: b.types, minCount: b.minCount, maxCount: b.maxCount })),
  };
}

type CollectedLmRun = Omit<LmRunReport, 'baseline' | 'learnableDecrease' | 'vsBaseline'>;

async function collectLmRun(runDir: string, ev: LmEvaluation): Promise<CollectedLmRun> {
  const run = await RunFolder.openTask(runDir, 'lm');
  const { config } = run;
  // Training progress is the last checkpoint's, not the evaluated (best) one's.
  const last = await readCheckpointInfo(runDir, 'last');
  const state = last?.state ?? {};
  return {
    id: basename(runDir),
    runDir,
    arch: config.arch,
    preset: config.preset,
    head: config.head.name,
    data: config.data.dir ?? 'default',
    seed: config.seed,
    training: {
      epochs: last?.epoch ?? ev.checkpoint.epoch,
      steps: last?.step ?? ev.checkpoint.step,
      minutes: Number(state.elapsedMs ?? 0) / 60_000,
      budgetMinutes: config.maxMinutes ?? null,
      stopReason: typeof state.stopReason === 'string' ? state.stopReason : null,
    },
    checkpoint: {
      which: ev.checkpoint.which,
      sha256: ev.checkpoint.sha256,
      step: ev.checkpoint.step,
      epoch: ev.checkpoint.epoch,
    },
    params: ev.params,
    valid: split(ev.valid),
    test: split(ev.test),
  };
}

/** (ppl − baseline ppl) / baseline ppl: negative when the run is better. */
export function relativeChange(ppl: number | null, base: number | null): number | null {
  return ppl === null || base === null || base === 0 ? null : (ppl - base) / base;
}

/** Runs compare with the `learned` run trained on the same thing: same arch, preset and corpus. */
const comparableKey = (r: CollectedLmRun) => JSON.stringify([r.arch, r.preset, r.data]);

export function compareLmWithBaselines(runs: CollectedLmRun[]): LmRunReport[] {
  const baselines = new Map<string, CollectedLmRun>();
  for (const r of runs)
    if (r.head === 'learned' && !baselines.has(comparableKey(r))) baselines.set(comparableKey(r), r);
  return runs.map((r) => {
    const base = baselines.get(comparableKey(r));
    if (!base) return { ...r, baseline: null, learnableDecrease: null, vsBaseline: null };
    return {
      ...r,
      baseline: base.id,
      learnableDecrease: (base.params.learnable - r.params.learnable) / base.params.learnable,
      vsBaseline: {
        test: relativeChange(r.test.perplexity, base.test.perplexity),
        bins: r.test.bins.map((b, k) => relativeChange(b.perplexity, base.test.bins[k]?.perplexity ?? null)),
      },
    };
  });
}

/**
 * Every language-model run (in the order given) with `frost eval`'s numbers: its `eval.json` when
 * that is current (same checkpoint hash and bins), otherwise evaluated now (which rewrites it).
 */
export async function collectLmReport(runDirs: string[], opts: CollectLmReportOptions): Promise<LmReport> {
  if (runDirs.length === 0) throw new Error('a report needs at least one run folder');
  refuseDuplicateNames(runDirs);
  const bins = opts.bins ?? 5;
  const which = opts.checkpoint ?? 'best';
  const runs: CollectedLmRun[] = [];
  for (const dir of runDirs) {
    const runDir = resolve(dir);
    opts.log?.(`collecting ${runDir}`);
    runs.push(await collectLmRun(runDir, await currentLmEvaluation(runDir, { which, bins })));
  }
  return lmReportSchema.parse({
    format: 'frost-lm-report',
    version: 1,
    title: opts.title,
    created: new Date().toISOString(),
    machine: machineInfo(),
    settings: { bins, checkpoint: which },
    runs: compareLmWithBaselines(runs),
  });
}
