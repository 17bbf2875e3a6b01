import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { checkpointSha256, RunFolder, type CheckpointName } from '../run-folder.ts';
import { prepareLmData } from './lm-data.ts';
import { SPECIALS } from '../../core/vocab.ts';
import {
  type LmEvalContext,
  perplexityReport,
  scoreLines,
  scoreStream,
  tokenCounts,
  type PerplexityReport,
} from './lm-evaluate.ts';

/** `frost eval`'s result for a language-model run, also written to the run folder as `eval.json`. */
export interface LmEvaluation {
  run: string;
  /** The checkpoint scored; `sha256` says whether a saved `eval.json` is still the current one. */
  checkpoint: { which: CheckpointName; dir: string; sha256: string; step: number; epoch: number };
  head: string;
  /** How the state was carried (lm-evaluate.ts); absent in files written before there was a choice: `stream`. */
  context: LmEvalContext;
  /** The model's parameters, as `frost export` counts them (frozen vectors rebuilt from a seed are generated). */
  params: { learnable: number; frozen: number; generated: number };
  valid: PerplexityReport;
  test: PerplexityReport;
}

export const LM_EVAL_FILE = 'eval.json';

/**
 * Where an evaluation is kept: `eval.json` for the default `stream` context (what `frost report`
 * reads), `eval.line.json` for `line`.
 */
export function lmEvalFile(context: LmEvalContext = 'stream'): string {
  return context === 'stream' ? LM_EVAL_FILE : `eval.${context}.json`;
}

interface EvalOptions {
  which?: CheckpointName;
  bins?: number;
  /** @default 'stream' */
  context?: LmEvalContext;
}

/**
 * Perplexity of a language-model run's checkpoint on its valid and test splits, overall and by
 * `bins` bins of training-word frequency (lm-evaluate.ts), scored as training reads the stream
 * (the run's `evalStreams` streams, `batch.bptt` windows, state carried), or with `context: 'line'`
 * each line from a fresh state.
 */
export async function evaluateLmRun(
  runDir: string,
  opts: EvalOptions & { quiet?: boolean } = {},
): Promise<LmEvaluation> {
  const run = await RunFolder.openTask(runDir, 'lm');
  const { config } = run;
  const data = await prepareLmData(config, runDir, true);
  const dir = run.findCheckpoint(opts.which ?? 'best');
  const loaded = await run.loadCheckpoint(dir);
  const model = run.rebuildLanguageModel(data.vocab.size, loaded, dir);
  try {
    const counts = tokenCounts(data.streams.train, data.vocab.size);
    const context = opts.context ?? 'stream';
    const score = (ids: Int32Array) =>
      context === 'line'
        ? scoreLines(model, ids, SPECIALS.eos.id)
        : scoreStream(model, ids, config.evalStreams, config.batch.bptt);
    const report = (ids: Int32Array) => perplexityReport(score(ids), counts, opts.bins ?? 5);
    const state = loaded.state as { step?: number; epoch?: number };
    const params = model.params.counts();
    const result: LmEvaluation = {
      run: runDir,
      checkpoint: {
        which: dir.endsWith('best') ? 'best' : 'last',
        dir,
        sha256: await checkpointSha256(dir),
        step: Number(state.step ?? 0),
        epoch: Number(state.epoch ?? 0),
      },
      head: config.head.name,
      context,
      params: {
        learnable: params.learnable,
        frozen: params.frozen,
        generated: model.head.generatedParams?.(false) ?? 0,
      },
      valid: report(data.streams.valid),
      test: report(data.streams.test),
    };
    await writeFile(join(runDir, lmEvalFile(context)), `${JSON.stringify(result, null, 2)}\n`);
    return result;
  } finally {
    model.params.dispose();
  }
}

/**
 * The run's saved `eval.json` when it still describes the checkpoint `which` picks now (same
 * SHA-256) with `bins` bins; null when it is absent, stale or written before eval.json kept the hash.
 */
export async function savedLmEvaluation(runDir: string, opts: EvalOptions = {}): Promise<LmEvaluation | null> {
  const path = join(runDir, lmEvalFile(opts.context));
  if (!existsSync(path)) return null;
  // Older eval.json files lack the hash and the parameter counts: read as partial, then checked.
  let saved: Partial<LmEvaluation>;
  try {
    saved = JSON.parse(await readFile(path, 'utf8')) as Partial<LmEvaluation>;
  } catch {
    return null; // a torn or hand-edited file is recomputed, not trusted
  }
  const { checkpoint, params, valid, test } = saved;
  if (!checkpoint?.sha256 || !params || !valid || test?.bins?.length !== (opts.bins ?? 5)) return null;
  const context = saved.context ?? 'stream';
  if (context !== (opts.context ?? 'stream')) return null;
  const run = await RunFolder.openTask(runDir, 'lm');
  const dir = run.findCheckpoint(opts.which ?? 'best');
  const which = dir.endsWith('best') ? 'best' : 'last';
  // Compared by hash, not path: a run folder that was moved keeps its evaluation.
  if (checkpoint.which !== which || checkpoint.sha256 !== (await checkpointSha256(dir))) return null;
  return {
    run: runDir,
    checkpoint: { ...checkpoint, dir },
    head: saved.head ?? run.config.head.name,
    context,
    params,
    valid,
    test,
  };
}

/** `eval.json` when it is current, otherwise a fresh evaluation (which rewrites it). */
export async function currentLmEvaluation(runDir: string, opts: EvalOptions = {}): Promise<LmEvaluation> {
  return (await savedLmEvaluation(runDir, opts)) ?? evaluateLmRun(runDir, opts);
}
