import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RunFolder, type CheckpointName } from '../run-folder.ts';
import { prepareLmData } from './lm-data.ts';
import { perplexityReport, scoreStream, tokenCounts, type PerplexityReport } from './lm-evaluate.ts';

/** `frost eval`'s result for a language-model run, also written to the run folder as `eval.json`. */
export interface LmEvaluation {
  run: string;
  checkpoint: { which: CheckpointName; dir: string };
  head: string;
  valid: PerplexityReport;
  test: PerplexityReport;
}

export const LM_EVAL_FILE = 'eval.json';

/**
 * Perplexity of a language-model run's checkpoint on its valid and test splits, overall and by
 * `bins` bins of training-word frequency (lm-evaluate.ts), scored as training reads the stream
 * (the run's `evalStreams` streams, `batch.bptt` windows, state carried).
 */
export async function evaluateLmRun(
  runDir: string,
  opts: { which?: CheckpointName; bins?: number; quiet?: boolean } = {},
): Promise<LmEvaluation> {
  const run = await RunFolder.openTask(runDir, 'lm');
  const { config } = run;
  const data = await prepareLmData(config, runDir, true);
  const dir = run.findCheckpoint(opts.which ?? 'best');
  const model = run.rebuildLanguageModel(data.vocab.size, await run.loadCheckpoint(dir), dir);
  try {
    const counts = tokenCounts(data.streams.train, data.vocab.size);
    const report = (ids: Int32Array) =>
      perplexityReport(scoreStream(model, ids, config.evalStreams, config.batch.bptt), counts, opts.bins ?? 5);
    const result: LmEvaluation = {
      run: runDir,
      checkpoint: { which: dir.endsWith('best') ? 'best' : 'last', dir },
      head: config.head.name,
      valid: report(data.streams.valid),
      test: report(data.streams.test),
    };
    await writeFile(join(runDir, LM_EVAL_FILE), `${JSON.stringify(result, null, 2)}\n`);
    return result;
  } finally {
    model.params.dispose();
  }
}
