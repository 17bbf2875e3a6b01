/**
 * Language modelling (`--task lm`, lstm-lm): truncated BPTT over a continuous stream, on a seeded
 * Markov chain whose entropy rate is known exactly (train/data/markov-corpus.ts), so the test can
 * say how close to the best possible perplexity a tiny model gets; every output head trains; the
 * per-frequency-bin evaluation; resume.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { headNames } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { TokenStream } from '../train/data/lm-stream.ts';
import { readLmText } from '../train/data/lm-corpus.ts';
import type { MarkovCorpus } from '../train/data/markov-corpus.ts';
import { evaluateLmRun } from '../train/lm/lm-eval-run.ts';
import { frequencyBins } from '../train/lm/lm-evaluate.ts';
import type { LmResult } from '../train/tasks/index.ts';
import { resume, train } from '../train/trainer.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { cachedLmRun, type LmRunSpec } from './helpers/lm-fixtures.ts';
import { tinyLmConfig, writeMarkovCorpus } from './helpers/lm-run.ts';

/** One epoch of tinyLmConfig on this file's corpus (writeMarkovCorpus's default sizes). */
const ONE_EPOCH: LmRunSpec = { config: { epochs: 1 } };
/** The quality run: 8 epochs at lr 3e-3. */
const EIGHT_EPOCHS: LmRunSpec = { config: { epochs: 8, optim: { learningRate: 3e-3 } } };

let dir: string;
let dataDir: string;
let corpus: MarkovCorpus;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-lm-'));
  ({ dataDir, corpus } = await writeMarkovCorpus(dir));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The true chain's perplexity on a split: the best any model can do on that sample. */
function oraclePerplexity(lines: readonly string[]): number {
  const tokens = lines.reduce((n, l) => n + l.split(' ').length + 1, 0);
  return Math.exp(-corpus.logProb(lines) / tokens);
}

describe('token streams', () => {
  test('windows of B streams continue each other and predict every position once', () => {
    const ids = Int32Array.from({ length: 23 }, (_, i) => i);
    const stream = new TokenStream(ids, 3); // 7 tokens per stream, the last 2 dropped
    assert.equal(stream.windowCount(4), 2);
    const w0 = stream.window(0, 4);
    const w1 = stream.window(1, 4);
    assert.deepEqual([...w0.inputs], [0, 1, 2, 3, 7, 8, 9, 10, 14, 15, 16, 17]);
    assert.deepEqual([...w0.targets], [1, 2, 3, 4, 8, 9, 10, 11, 15, 16, 17, 18]);
    assert.equal(w1.T, 2);
    assert.deepEqual([...w1.inputs], [4, 5, 11, 12, 18, 19]);
    assert.deepEqual([...w1.targets], [5, 6, 12, 13, 19, 20]);
    assert.equal(stream.tokens, 18);
  });

  test('frequency bins split the training tokens into equal masses, most frequent first', () => {
    const counts = Float64Array.from([0, 50, 30, 10, 5, 5]);
    assert.deepEqual([...frequencyBins(counts, 2)], [1, 0, 1, 1, 1, 1]);
    assert.deepEqual([...frequencyBins(counts, 4)], [3, 0, 2, 3, 3, 3]);
  });
});

describe('corpora', () => {
  test('one file is split into train, valid and test by its last lines, in order', async () => {
    const lines = corpus.lines.train.slice(0, 100);
    const file = join(dir, 'one.txt');
    await (await import('node:fs/promises')).writeFile(file, `${lines.join('\n')}\n\n`);
    const text = await readLmText(file, { valid: 0.1, test: 0.2 });
    assert.deepEqual(text.lines.valid, lines.slice(70, 80));
    assert.deepEqual(text.lines.test, lines.slice(80));
    assert.deepEqual(text.lines.train, lines.slice(0, 70));
    await assert.rejects(readLmText(join(dir, 'nowhere')), /nowhere: language-model corpus not found/);
    await assert.rejects(readLmText(dir), /no train file \(looked for train\.txt, ptb\.train\.txt/);
  });
});

describe('lstm-lm on a Markov chain of known entropy', () => {
  // The chain's entropy rate H is exact (stationary distribution × row entropies); its own
  // perplexity on the 6000-token test sample is the oracle. The bound: within 6% above the oracle
  // after 8 epochs at lr 3e-3 (measured 4.1% at this seed), and not below 0.97 × the oracle (only sampling
  // noise could take a model below the chain itself).
  test('test perplexity within 6% of the true chain', async (t) => {
    // Eight epochs on this file's corpus, trained once per code change (helpers/lm-fixtures.ts): what is
    // checked is where training ends, so a cached run checks the same; eval writes into a copy.
    const { runDir: cached } = await cachedLmRun(EIGHT_EPOCHS);
    const runDir = await copyFixture(cached, join(dir, 'markov-run'));
    const report = await evaluateLmRun(runDir, { quiet: true });
    const oracle = oraclePerplexity(corpus.lines.test);
    assert.ok(Math.abs(oracle - Math.exp(corpus.entropyRate)) / oracle < 0.03, 'the sample is typical of the chain');
    const ppl = report.test.perplexity;
    t.diagnostic(
      `test perplexity ${ppl.toFixed(4)}, oracle ${oracle.toFixed(4)} (${((ppl / oracle - 1) * 100).toFixed(2)}% above), exp(H) ${Math.exp(corpus.entropyRate).toFixed(4)}`,
    );
    assert.ok(ppl <= 1.06 * oracle, `test perplexity ${ppl.toFixed(3)} > 1.06 × oracle ${oracle.toFixed(3)}`);
    assert.ok(ppl >= 0.97 * oracle, `test perplexity ${ppl.toFixed(3)} below the chain's own ${oracle.toFixed(3)}`);
    assert.equal(report.test.bins.length, 5);
    assert.equal(
      report.test.bins.reduce((n, b) => n + b.tokens, 0),
      report.test.tokens,
    );
    // Binned perplexities recombine to the overall one (token-weighted NLL).
    const nll = report.test.bins.reduce((s, b) => s + (b.tokens ? b.nll * b.tokens : 0), 0) / report.test.tokens;
    assert.ok(Math.abs(nll - report.test.nll) < 1e-9);
    // A first-order chain's next word depends on `</s>` alone at a line start, so reading each line
    // from a fresh state loses no information: --context line stays close to the carried stream.
    // Not equal: training sees a zero state only at each epoch's start, so a model reads from one a
    // little worse (3.2% above the stream at this seed; the bound is 6%). Kept beside eval.json.
    const lineReport = await evaluateLmRun(runDir, { context: 'line' });
    assert.equal(lineReport.context, 'line');
    assert.equal(
      lineReport.test.tokens,
      corpus.lines.test.reduce((n, l) => n + l.split(' ').length + 1, 0),
    );
    assert.ok(
      Math.abs(lineReport.test.perplexity / ppl - 1) < 0.06,
      `line ${lineReport.test.perplexity.toFixed(3)} vs stream ${ppl.toFixed(3)}`,
    );
    assert.equal(
      (JSON.parse(await readFile(join(runDir, 'eval.json'), 'utf8')) as { context: string }).context,
      'stream',
    );
    assert.ok((await readFile(join(runDir, 'eval.line.json'), 'utf8')).includes('"context": "line"'));
    const metrics = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8')).trim().split('\n');
    assert.equal(metrics.length, 8);
    const last = JSON.parse(metrics.at(-1)!) as { valPerplexity: number };
    assert.ok(last.valPerplexity < 1.1 * oraclePerplexity(corpus.lines.valid));
  });

  test('resume continues from the last checkpoint', async () => {
    // The first epoch is a cached run (the same config on the same corpus); resuming it is what is tested.
    const { runDir: cached, trained: first } = await cachedLmRun(ONE_EPOCH);
    const runDir = await copyFixture(cached, join(dir, 'resume-run'));
    const second = await resume<LmResult>(runDir, { epochs: 2 }, { quiet: true });
    second.model.params.dispose();
    assert.equal(second.epochs, 2);
    assert.equal(second.steps, 2 * first.steps);
    assert.ok(second.bestValPerplexity < first.bestValPerplexity);
  });

  test('an update budget stops inside an epoch, and resuming with a larger one continues to it', async () => {
    const { trained: epoch } = await cachedLmRun(ONE_EPOCH);
    const budget = Math.floor(epoch.steps / 2);
    assert.ok(budget >= 1, `an epoch has ${epoch.steps} updates`);
    const runDir = join(dir, 'updates-run');
    const first = await train(tinyLmConfig(dataDir, { maxUpdates: budget }), runDir, { quiet: true });
    first.model.params.dispose();
    assert.equal(first.steps, budget);
    const second = await resume<LmResult>(runDir, { maxUpdates: budget + 3 }, { quiet: true });
    second.model.params.dispose();
    assert.equal(second.steps, budget + 3);
  });
});

describe('every head trains', () => {
  // Two thirds of the corpus: every head still ends its epoch at or below 8.2 (fixed-l2; most 4.5-7), the bound is 14.
  let headData: string;
  before(async () => {
    ({ dataDir: headData } = await writeMarkovCorpus(join(dir, 'heads'), { train: 16_000, valid: 3_000, test: 6_000 }));
  });

  for (const head of headNames()) {
    test(`${head}: one epoch takes validation perplexity well below uniform`, async () => {
      const runDir = join(dir, `head-${head}`);
      const options = head === 'drill' ? { layers: 1, dropout: 0.1 } : {};
      const config = tinyLmConfig(headData, { epochs: 1, head: { name: head, options } });
      const result = await train(config, runDir, { quiet: true });
      const V = result.data.vocab.size;
      result.model.params.dispose();
      // Uniform over the vocabulary is V = 28; the chain's own is ≈ 3.7.
      assert.ok(result.bestValPerplexity < V / 2, `${head}: val perplexity ${result.bestValPerplexity} ≥ ${V / 2}`);
    });
  }
});
