/**
 * Perplexity of each evaluation stream of language-model runs, valid and test: `frost eval` scores
 * a split as `evalStreams` parallel streams with the LSTM state carried through each, and one
 * stream whose state degenerates can dominate the split's perplexity (README, the `tied` run).
 *
 *   node --import tsx bench/investigations/lm-streams.ts runs/lm-tied runs/lm-drill
 */
import '../../models/index.ts';
import { initBackend } from '../../train/backend/select.ts';
import { prepareLmData } from '../../train/lm/lm-data.ts';
import { scoreStream } from '../../train/lm/lm-evaluate.ts';
import { RunFolder } from '../../train/run-folder.ts';

const runDirs = process.argv.slice(2);
if (runDirs.length === 0) throw new Error('usage: node --import tsx bench/investigations/lm-streams.ts RUN_DIR...');
await initBackend({ quiet: true });
for (const runDir of runDirs) {
  const run = await RunFolder.openTask(runDir, 'lm');
  const { config } = run;
  const data = await prepareLmData(config, runDir, true);
  const dir = run.findCheckpoint('best');
  const model = run.rebuildLanguageModel(data.vocab.size, await run.loadCheckpoint(dir), dir);
  try {
    for (const [split, ids] of [
      ['valid', data.streams.valid],
      ['test', data.streams.test],
    ] as const) {
      const { logProbs, streams } = scoreStream(model, ids, config.evalStreams, config.batch.bptt);
      const per = logProbs.length / streams;
      const perplexities = Array.from({ length: streams }, (_, b) => {
        let nll = 0;
        for (let i = b * per; i < (b + 1) * per; i++) nll -= logProbs[i];
        return Math.exp(nll / per);
      });
      console.log(
        `${runDir} ${split} (${streams} streams of ${per} tokens): ${perplexities.map((p) => p.toFixed(1)).join(' ')}`,
      );
    }
  } finally {
    model.params.dispose();
  }
}
