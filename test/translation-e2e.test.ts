import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
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
import type { TranslationRunConfigInput } from '../train/run-config.ts';
import { resume, train } from '../train/trainer.ts';
import { checkModel } from './helpers/onnx-check.ts';
import { toyRunConfig, toyTestBleu, writeToyData } from './helpers/toy-run.ts';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '..', 'bin', 'frost.js');
let dir: string;
let dataDir: string;

function config(head: string, extra: Partial<TranslationRunConfigInput> = {}) {
  return toyRunConfig(dataDir, head, { epochs: 4, ...extra });
}

const testBleu = (modelDir: string) => toyTestBleu(modelDir, dataDir);

/**
 * Each test gets what it needs from these, trained once per file by whichever test asks first, so
 * that any test runs alone (`--test-name-pattern`) as well as in order.
 */
const made = new Map<string, Promise<unknown>>();
function once<T>(key: string, make: () => Promise<T>): Promise<T> {
  if (!made.has(key)) made.set(key, make());
  return made.get(key) as Promise<T>;
}

/** A model of `head` trained for 4 epochs and exported. */
function exportedModel(head: string) {
  return once(`model-${head}`, async () => {
    const runDir = join(dir, `run-${head}`);
    const result = await train(config(head), runDir, { quiet: true });
    result.model.params.dispose();
    const modelDir = join(dir, `model-${head}`);
    return { modelDir, ...(await exportRun(runDir, modelDir, { quiet: true })) };
  });
}

/** A copy, at `runDir`, of a `tied` run stopped after one epoch (each test changes its own copy). */
async function oneEpochRun(runDir: string): Promise<void> {
  const pristine = await once('one-epoch', async () => {
    const at = join(dir, 'run-one-epoch');
    const first = await train(config('tied', { epochs: 1 }), at, { quiet: true });
    first.model.params.dispose();
    return at;
  });
  await cp(pristine, runDir, { recursive: true });
}

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-e2e-'));
  dataDir = join(dir, 'toy');
  await writeToyData(dataDir);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('translation from corpus to ONNX answer on the toy corpus', () => {
  for (const head of ['learned', 'fixed-l2']) {
    test(`${head}: a tiny model reaches >= 90 BLEU on held-out sentences through onnxruntime`, async () => {
      const { modelDir, card, parity } = await exportedModel(head);
      assert.ok(parity.maxScaledDiff <= 1e-4);
      assert.equal(card.head.name, head);
      for (const file of ['encoder.onnx', 'decoder.onnx']) checkModel(join(modelDir, file));
      const bleu = await testBleu(modelDir);
      assert.ok(bleu >= 90, `test BLEU ${bleu.toFixed(2)} < 90`);
    });
  }

  test("fixed-uniform's training loss falls every epoch", async () => {
    const runDir = join(dir, 'run-fixed-uniform');
    const result = await train(config('fixed-uniform', { epochs: 3 }), runDir, { quiet: true });
    result.model.params.dispose();
    const losses = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { trainLoss: number }).trainLoss);
    assert.equal(losses.length, 3);
    for (let i = 1; i < losses.length; i++) assert.ok(losses[i] < losses[i - 1], `losses ${losses.join(', ')}`);
  });

  test('an interrupted run resumes from its last checkpoint and continues its step count', async () => {
    const runDir = join(dir, 'run-resume');
    await oneEpochRun(runDir);
    const saved = await loadCheckpoint(join(runDir, 'checkpoints', 'last'));
    const stepsAfterOne = (saved.state as { step: number }).step;
    assert.ok(stepsAfterOne > 0);
    const second = await resume(runDir, { epochs: 2 }, { quiet: true });
    second.model.params.dispose();
    assert.equal(second.epochs, 2);
    assert.equal(second.steps, 2 * stepsAfterOne);
    const lines = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8')).trim().split('\n');
    assert.equal(lines.length, 2);
    await assert.rejects(train(config('tied'), runDir, { quiet: true }), /already holds a run/);
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
    const { modelDir } = await exportedModel('learned');
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

  test('the frost bin translates with an exported model (stdin lines and arguments)', async () => {
    const { modelDir } = await exportedModel('learned');
    const src = (await readFile(join(dataDir, 'test.src'), 'utf8')).trim().split('\n').slice(0, 3);
    const { stdout } = await run(process.execPath, [CLI, 'translate', modelDir, '--beam', '4', ...src]);
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, 3);
    const ref = (await readFile(join(dataDir, 'test.tgt'), 'utf8')).trim().split('\n').slice(0, 3);
    assert.ok(corpusBleu(lines, [ref]).score > 80, stdout);
  });
});
