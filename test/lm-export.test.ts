/**
 * A language model from run folder to onnxruntime: the step graph's parity with tfjs, its card,
 * LmRuntime's score against the tfjs model's log-probability, seeded completion, and the sampler.
 */
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { checkSamplingOptions, TokenSampler } from '../core/decode/sampling.ts';
import { loadLmModelDir } from '../core/runtime/load-lm-node.ts';
import type { LmCard } from '../core/runtime/lm-card.ts';
import type { LmRuntime } from '../core/runtime/lm.ts';
import { SPECIALS } from '../core/vocab.ts';
import { exportRun } from '../export/export-run.ts';
import { initBackend } from '../train/backend/select.ts';
import { RunFolder } from '../train/run-folder.ts';
import { checkModel } from './helpers/onnx-check.ts';
import { cachedLmRun, type LmRunSpec } from './helpers/lm-fixtures.ts';

let dir: string;
let runDir: string;
let modelDir: string;
let runtime: LmRuntime;

/** Two layers and the drill head: the step graph carries h0, c0, h1, c1 and the head's residual MLP. */
const TWO_LAYER_DRILL: LmRunSpec = {
  tokens: { train: 8000, valid: 1500, test: 1500 },
  config: {
    epochs: 2,
    archConfig: { embedding: 24, hidden: 32, layers: 2, dropoutEmbedding: 0.1, dropoutHidden: 0.1, dropout: 0.1 },
    head: { name: 'drill', options: { layers: 2 } },
  },
};

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-lm-export-'));
  // Exporting only reads the run: the cached one is used in place.
  ({ runDir } = await cachedLmRun(TWO_LAYER_DRILL));
  modelDir = join(dir, 'model');
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('lm export', () => {
  test('the step graph reproduces tfjs within 1e-4 and the card describes it', async () => {
    const { card, parity } = await exportRun<LmCard>(runDir, modelDir, { quiet: true });
    assert.ok(parity.maxScaledDiff <= 1e-4, `parity ${parity.maxScaledDiff}`);
    assert.ok(parity.steps >= 20 && parity.sentences === 4);
    assert.equal(card.task, 'lm');
    assert.deepEqual(card.graphs.step.state, ['h0', 'c0', 'h1', 'c1']);
    assert.equal(card.graphs.step.stateSize, 32);
    assert.deepEqual(card.head, { name: 'drill', layers: 2 });
    checkModel(join(modelDir, 'step.onnx'));
    runtime = await loadLmModelDir(modelDir);
  });

  test("score equals the tfjs model's log-probability of the text", async () => {
    const text = 'w3 w7 w1 w0';
    const scored = await runtime.score(text);
    const run = await RunFolder.openTask(runDir, 'lm');
    const ckpt = run.findCheckpoint('best');
    const vocab = await run.vocab('tgt');
    const model = run.rebuildLanguageModel(vocab.size, await run.loadCheckpoint(ckpt), ckpt);
    const ids = [SPECIALS.eos.id, ...vocab.encode(text.split(' ')), SPECIALS.eos.id];
    const window = {
      B: 1,
      T: ids.length - 1,
      inputs: Int32Array.from(ids.slice(0, -1)),
      targets: Int32Array.from(ids.slice(1)),
    };
    const { logProbs, state } = model.targetLogProbs(window, model.initialState(1));
    tf.dispose(Object.values(state));
    model.params.dispose();
    const expected = logProbs.reduce((a, b) => a + b, 0);
    assert.equal(scored.tokenLogProbs.length, 5);
    assert.ok(
      Math.abs(scored.logProb - expected) <= 1e-4 * Math.max(1, Math.abs(expected)),
      `${scored.logProb} vs ${expected}`,
    );
    assert.ok(Math.abs(scored.perplexity - Math.exp(-expected / 5)) < 1e-3);
  });

  test('a seeded completion is reproducible; another seed or greedy decoding differ from it', async () => {
    const opts = { maxNewTokens: 30, temperature: 1, seed: 42 };
    const a = await runtime.complete('w3 w7', opts);
    const b = await runtime.complete('w3 w7', opts);
    assert.deepEqual(a, b);
    const others = await Promise.all([1, 2, 3].map((seed) => runtime.complete('w3 w7', { ...opts, seed })));
    assert.ok(
      others.some((o) => o.text !== a.text),
      'every seed gave the same completion',
    );
    const greedy = await runtime.complete('w3 w7', { maxNewTokens: 30 });
    const greedyAgain = await runtime.complete('w3 w7', { maxNewTokens: 30, temperature: 1, topK: 1, seed: 9 });
    assert.deepEqual(greedyAgain.tokens, greedy.tokens, 'top_k 1 is greedy');
    for (const c of [a, greedy]) {
      assert.ok(c.tokens.length <= 30);
      assert.ok(
        c.tokens.every((t) => /^w\d+$/.test(t)),
        c.tokens.join(' '),
      );
      assert.ok(c.finishReason === 'eos' || c.tokens.length === 30);
    }
  });

  test('stop tokens end a completion and are kept; streaming sees every token', async () => {
    const seen: string[] = [];
    const c = await runtime.complete('w3', {
      maxNewTokens: 50,
      temperature: 1.5,
      seed: 5,
      stop: ['w1', 'w2', 'w4', 'w5', 'w6'],
      onToken: (t) => seen.push(t),
    });
    assert.deepEqual(seen, c.tokens);
    if (c.finishReason === 'stop') assert.ok(['w1', 'w2', 'w4', 'w5', 'w6'].includes(c.tokens.at(-1)!));
    else assert.ok(c.tokens.every((t) => !['w1', 'w2', 'w4', 'w5', 'w6'].includes(t)));
  });

  test('--keep-last epoch checkpoints; --average-last 2 exports their mean, with parity, named in the card', async () => {
    const run = await RunFolder.openTask(runDir, 'lm');
    assert.deepEqual(
      run.epochCheckpoints().map((c) => c.epoch),
      [1, 2],
    );
    const avgDir = join(dir, 'model-avg');
    const { card, parity } = await exportRun<LmCard>(runDir, avgDir, { averageLast: 2, quiet: true });
    assert.ok(parity.maxScaledDiff <= 1e-4, `parity ${parity.maxScaledDiff}`);
    const source = card.config.checkpoint as { which: string; averaged: { epoch: number; dir: string }[] };
    assert.equal(source.which, 'average-last-2');
    assert.deepEqual(
      source.averaged.map((c) => [c.epoch, c.dir]),
      [
        [1, 'epoch-0001'],
        [2, 'epoch-0002'],
      ],
    );
    assert.equal(card.metrics.valPerplexity, undefined, 'no perplexity claimed for a model never validated');
    // The averaged weights are what the graph holds: its score is the tfjs model's of the mean, not best's.
    const { checkpoint } = await run.averageLast(2);
    const vocab = await run.vocab('tgt');
    const model = run.rebuildLanguageModel(vocab.size, checkpoint, 'average');
    const ids = [SPECIALS.eos.id, ...vocab.encode(['w3', 'w7', 'w1']), SPECIALS.eos.id];
    const { logProbs, state } = model.targetLogProbs(
      { B: 1, T: ids.length - 1, inputs: Int32Array.from(ids.slice(0, -1)), targets: Int32Array.from(ids.slice(1)) },
      model.initialState(1),
    );
    tf.dispose(Object.values(state));
    model.params.dispose();
    const averaged = await loadLmModelDir(avgDir);
    const got = (await averaged.score('w3 w7 w1')).logProb;
    await averaged.release();
    const expected = logProbs.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(got - expected) <= 1e-4 * Math.max(1, Math.abs(expected)), `${got} vs ${expected}`);
    assert.notEqual(got, (await runtime.score('w3 w7 w1')).logProb, 'not the best checkpoint');
    await assert.rejects(
      exportRun<LmCard>(runDir, join(dir, 'model-avg3'), { averageLast: 3, quiet: true }),
      (err: Error) =>
        err.message.includes(runDir) && /keeps 2 epoch checkpoints .* fewer than --average-last 3/.test(err.message),
    );
  });

  test('a truncated step graph is refused with its path', async () => {
    const broken = join(dir, 'broken');
    await exportRun<LmCard>(runDir, broken, { quiet: true });
    await writeFile(join(broken, 'step.onnx'), new Uint8Array(10));
    await assert.rejects(loadLmModelDir(broken), /step\.onnx: 10 bytes, but the model card records/);
  });
});

describe('subword language models', () => {
  test('a BPE run exports its .model file, and the runtime reads text through it', async () => {
    const { runDir: bpeRun } = await cachedLmRun({
      tokens: { train: 5000, valid: 800, test: 800 },
      config: { epochs: 1, vocab: { kind: 'bpe', size: 300 }, tokenizer: 'sentencepiece' },
    });
    const out = join(dir, 'bpe-model');
    const { card, parity } = await exportRun<LmCard>(bpeRun, out, { quiet: true });
    assert.ok(parity.maxScaledDiff <= 1e-4);
    assert.equal(card.tokenizer, 'sentencepiece');
    assert.ok(card.files['subword.en.model'] && card.subword);
    const bpe = await loadLmModelDir(out);
    const scored = await bpe.score('w14 w3 w7');
    // Letters and digits are different scripts, so no piece joins them (as with spm_train's defaults).
    assert.deepEqual(scored.tokens, ['\u2581w', '14', '\u2581w', '3', '\u2581w', '7']);
    assert.ok(Number.isFinite(scored.logProb) && scored.logProb < 0);
  });
});

describe('sampling', () => {
  const logProbs = Float32Array.from([0.5, 0.3, 0.15, 0.05].map(Math.log));

  test('temperature 1 draws tokens at their probabilities; top-p and top-k cut the tail', () => {
    const draws = (opts: ConstructorParameters<typeof TokenSampler>[0], n = 4000) => {
      const s = new TokenSampler(opts);
      const counts = [0, 0, 0, 0];
      for (let i = 0; i < n; i++) counts[s.pick(logProbs, 0, 4)]++;
      return counts.map((c) => c / n);
    };
    const freq = draws({ temperature: 1, seed: 3 });
    [0.5, 0.3, 0.15, 0.05].forEach((p, i) => assert.ok(Math.abs(freq[i] - p) < 0.03, `${i}: ${freq[i]} vs ${p}`));
    // top_p 0.8 keeps {0, 1} (0.5 + 0.3 reaches 0.8): renormalised 0.625 / 0.375.
    const nucleus = draws({ temperature: 1, topP: 0.8, seed: 3 });
    assert.equal(nucleus[2] + nucleus[3], 0);
    assert.ok(Math.abs(nucleus[0] - 0.625) < 0.03);
    const k3 = draws({ temperature: 1, topK: 3, seed: 3 });
    assert.equal(k3[3], 0);
    // A low temperature sharpens towards the argmax.
    assert.ok(draws({ temperature: 0.2, seed: 3 })[0] > 0.9);
    assert.equal(new TokenSampler({}).pick(logProbs, 0, 4, new Set([0])), 1, 'greedy skips banned tokens');
  });

  test('bad options name their field', () => {
    assert.throws(() => checkSamplingOptions({ temperature: -1 }), /temperature/);
    assert.throws(() => checkSamplingOptions({ topP: 0 }), /top_p must be in \(0, 1\]/);
    assert.throws(() => checkSamplingOptions({ topP: 1.5 }), /top_p/);
    assert.throws(() => checkSamplingOptions({ topK: 1.5 }), /top_k/);
    assert.throws(() => checkSamplingOptions({ seed: -1 }), /seed/);
  });
});
