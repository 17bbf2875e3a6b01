import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { corpusBleu } from '../core/metrics/bleu.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { exportRun } from '../export/export-run.ts';
import { startServer } from '../serve/server.ts';
import { initBackend } from '../train/backend/select.ts';
import { loadCheckpoint } from '../train/checkpoint.ts';
import { resume, train } from '../train/trainer.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { startOnnxChecker, type OnnxChecker } from './helpers/onnx-checker.ts';
import { cachedToyRun, type ToyRunSpec } from './helpers/toy-fixtures.ts';
import { cachedToyExport } from './helpers/toy-exports.ts';
import { toyRunConfig, toyTestBleu } from './helpers/toy-run.ts';
import { RNN_ATTN_LEARNED } from './helpers/toy-specs.ts';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '..', 'bin', 'frost.js');
let dir: string;
/** One Python checker for the file's models: a Python start per model cost more than the check. */
let checker: OnnxChecker;

/**
 * The toy runs, trained once per content hash of the code that trains them (cached-fixture.ts) and
 * shared with other test files: each BLEU test is one 4-epoch run, trained as the test always did.
 */
const TRAINED: Record<string, ToyRunSpec> = {
  learned: RNN_ATTN_LEARNED,
  'fixed-l2': { head: 'fixed-l2', config: { epochs: 4 } },
};
/**
 * Three epochs whose training losses the loss test reads, on a sixth of the toy corpus: the losses fall as
 * surely (4.73, 2.25, 1.60 on the development machine; 2.34, 1.28, 0.88 on all of it) for a sixth of the training.
 */
const FIXED_UNIFORM: ToyRunSpec = {
  head: 'fixed-uniform',
  corpus: { seed: 1, train: 1000, val: 20, test: 20 },
  config: { epochs: 3 },
};
/** A run stopped after one epoch; the resume and corruption tests need a checkpoint, not a good model. */
const ONE_EPOCH: ToyRunSpec = { head: 'tied', corpus: { seed: 1, train: 300, val: 8, test: 8 }, config: { epochs: 1 } };

/** A copy, at `runDir`, of the one-epoch run (each test changes its own copy); returns the run's data folder. */
async function oneEpochRun(runDir: string): Promise<string> {
  const pristine = await cachedToyRun(ONE_EPOCH);
  await copyFixture(pristine.runDir, runDir);
  return pristine.dataDir;
}

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-e2e-'));
  checker = await startOnnxChecker();
});

after(async () => {
  await checker.close();
  await rm(dir, { recursive: true, force: true });
});

describe('translation from corpus to ONNX answer on the toy corpus', () => {
  for (const head of ['learned', 'fixed-l2']) {
    test(`${head}: a tiny model reaches >= 90 BLEU on held-out sentences through onnxruntime`, async () => {
      const { outDir, card, parity, dataDir } = await cachedToyExport(TRAINED[head]!);
      assert.ok(parity.maxScaledDiff <= 1e-4);
      assert.equal(card.head.name, head);
      for (const file of ['encoder.onnx', 'decoder.onnx']) await checker.check(join(outDir, file));
      const bleu = await toyTestBleu(outDir, dataDir);
      assert.ok(bleu >= 90, `test BLEU ${bleu.toFixed(2)} < 90`);
    });
  }

  test("fixed-uniform's training loss falls every epoch", async () => {
    const { runDir } = await cachedToyRun(FIXED_UNIFORM);
    const losses = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { trainLoss: number }).trainLoss);
    assert.equal(losses.length, 3);
    for (let i = 1; i < losses.length; i++) assert.ok(losses[i] < losses[i - 1], `losses ${losses.join(', ')}`);
  });

  test('an interrupted run resumes from its last checkpoint and continues its step count', async () => {
    const runDir = join(dir, 'run-resume');
    const dataDir = await oneEpochRun(runDir);
    const saved = await loadCheckpoint(join(runDir, 'checkpoints', 'last'));
    const stepsAfterOne = (saved.state as { step: number }).step;
    assert.ok(stepsAfterOne > 0);
    const second = await resume(runDir, { epochs: 2 }, { quiet: true });
    second.model.params.dispose();
    assert.equal(second.epochs, 2);
    assert.equal(second.steps, 2 * stepsAfterOne);
    const lines = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8')).trim().split('\n');
    assert.equal(lines.length, 2);
    await assert.rejects(
      train(toyRunConfig(dataDir, 'tied', { epochs: 4 }), runDir, { quiet: true }),
      /already holds a run/,
    );
  });

  test('a corrupt checkpoint is refused with its path', async () => {
    const runDir = join(dir, 'run-corrupt');
    await oneEpochRun(runDir);
    const bin = join(runDir, 'checkpoints', 'last', 'tensors.bin');
    const bytes = await readFile(bin);
    bytes[100] ^= 0xff;
    await writeFile(bin, bytes);
    await assert.rejects(
      resume(runDir, { epochs: 3 }, { quiet: true }),
      (err: Error) => err.message.includes(bin) && /corrupt/.test(err.message),
    );
    await writeFile(bin, bytes.subarray(0, 10));
    await assert.rejects(exportRun(runDir, join(dir, 'never'), { checkpoint: 'last', quiet: true }), (err: Error) =>
      err.message.includes(bin),
    );
  });

  test('frost serve answers with the same translation as the runtime, and 4xx with a reason on bad input', async () => {
    const { outDir: modelDir, dataDir } = await cachedToyExport(RNN_ATTN_LEARNED);
    const text = (await readFile(join(dataDir, 'test.src'), 'utf8')).split('\n')[0];
    const runtime = await loadModelDir(modelDir);
    const [expected] = await runtime.translate([text], { beam: 3 });
    await runtime.release();
    const server = await startServer({ modelsDir: modelDir, port: 0, log: () => {} });
    try {
      const post = (body: string) =>
        fetch(`${server.url}/v1/translate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const ok = await post(JSON.stringify({ text, beam: 3 }));
      assert.equal(ok.status, 200);
      const json = (await ok.json()) as { translations: { text: string; score: number }[] };
      assert.equal(json.translations[0].text, expected.text);
      assert.ok(Math.abs(json.translations[0].score - expected.score) < 1e-5);
      const bad = await post('{"text": ');
      assert.equal(bad.status, 400);
      assert.equal(((await bad.json()) as { code: string }).code, 'FROST_ERR_BAD_JSON');
      const unknown = await post(JSON.stringify({ model: 'nope', text }));
      assert.equal(unknown.status, 404);
    } finally {
      await server.close();
    }
  });

  // The bin itself is what this checks, so it runs as a child process.
  test('the frost bin translates with an exported model (stdin lines and arguments)', async () => {
    const { outDir: modelDir, dataDir } = await cachedToyExport(RNN_ATTN_LEARNED);
    const src = (await readFile(join(dataDir, 'test.src'), 'utf8')).trim().split('\n').slice(0, 3);
    const { stdout } = await run(process.execPath, [CLI, 'translate', modelDir, '--beam', '4', ...src]);
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, 3);
    const ref = (await readFile(join(dataDir, 'test.tgt'), 'utf8')).trim().split('\n').slice(0, 3);
    assert.ok(corpusBleu(lines, [ref]).score > 80, stdout);
  });
});
