/**
 * ConvS2S end to end on the toy corpus: `frost train --arch convs2s` (tiny preset) → export with the
 * incremental decoder → onnxruntime, greedy and beam search (beam reorders the convolution windows
 * like any decoder state) → frost serve.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { newRunConfig } from '../clients/cli/commands/train-config.ts';
import { corpusBleu } from '../core/metrics/bleu.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { getExperiment } from '../experiments/index.ts';
import { startServer } from '../serve/server.ts';
import { initBackend } from '../train/backend/select.ts';
import { checkModel } from './helpers/onnx-check.ts';
import { cachedToyExport } from './helpers/toy-exports.ts';
import { toyTestBleu } from './helpers/toy-run.ts';

let dir: string;
let modelDir: string;
let dataDir: string;
let parity: number;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-convs2s-e2e-'));
  // Trained and exported once per content hash of the code that does it (cached-fixture.ts).
  // Without weight normalisation the GLU stack wants a tighter gradient clip than the GRU's 5.
  const exported = await cachedToyExport({
    head: 'learned',
    config: { arch: 'convs2s', epochs: 7, optim: { learningRate: 3e-3, clipNorm: 1 } },
  });
  ({ dataDir, outDir: modelDir } = exported);
  parity = exported.parity.maxScaledDiff;
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('convs2s on the toy corpus', () => {
  test('a tiny ConvS2S reaches >= 90 BLEU on held-out sentences through onnxruntime, greedy and beam 4', async (t) => {
    assert.ok(parity <= 1e-4, `export parity ${parity}`);
    for (const file of ['encoder.onnx', 'decoder.onnx']) checkModel(join(modelDir, file));
    const greedy = await toyTestBleu(modelDir, dataDir);
    assert.ok(greedy >= 90, `greedy test BLEU ${greedy.toFixed(2)} < 90`);
    const runtime = await loadModelDir(modelDir);
    const src = (await readFile(join(dataDir, 'test.src'), 'utf8')).trim().split('\n');
    const ref = (await readFile(join(dataDir, 'test.tgt'), 'utf8')).trim().split('\n');
    const out = await runtime.translate(src, { beam: 4 });
    await runtime.release();
    const beam = corpusBleu(
      out.map((t) => t.text),
      [ref],
    ).score;
    t.diagnostic(
      `test BLEU: greedy ${greedy.toFixed(2)}, beam 4 ${beam.toFixed(2)}; export parity ${parity.toExponential(2)}`,
    );
    assert.ok(beam >= 90, `beam-4 test BLEU ${beam.toFixed(2)} < 90`);
  });

  test('frost serve answers with the runtime translation', async () => {
    const text = (await readFile(join(dataDir, 'test.src'), 'utf8')).split('\n')[0]!;
    const runtime = await loadModelDir(modelDir);
    const [expected] = await runtime.translate([text], { beam: 3 });
    await runtime.release();
    const server = await startServer({ modelsDir: modelDir, port: 0, log: () => {} });
    try {
      const res = await fetch(`${server.url}/v1/translate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text, beam: 3 }),
      });
      assert.equal(res.status, 200);
      const json = (await res.json()) as { translations: { text: string; score: number }[] };
      assert.equal(json.translations[0]!.text, expected!.text);
      assert.ok(Math.abs(json.translations[0]!.score - expected!.score) < 1e-5);
    } finally {
      await server.close();
    }
  });

  test('frost train flags: --arch convs2s with a preset, --set on a layer stack, --clip-norm', async () => {
    const config = await newRunConfig(
      {
        task: 'translation',
        arch: 'convs2s',
        head: 'tied',
        data: dataDir,
        preset: 'wmt',
        set: { decoderLayers: '512:3*2,2048:1', dropout: 0.1 },
        headOption: {},
        seed: 1,
        clipNorm: 0.5,
      },
      join(dir, 'flags-run'),
    );
    assert.equal(config.arch, 'convs2s');
    assert.equal(config.optim.clipNorm, 0.5, "the flag wins over convs2s's recipe (clip 1)");
    assert.equal(config.optim.learningRate, 1e-3);
    assert.equal(config.archConfig.decoderLayers, '512:3*2,2048:1');
    assert.equal(config.archConfig.embedding, 768);
    assert.equal(config.archConfig.dropout, 0.1);
  });

  test('frost experiment mt-heads --arch convs2s: an unknown architecture or preset is refused before any data is read', async () => {
    const mtHeads = getExperiment('mt-heads');
    const out = join(dir, 'never-written');
    await assert.rejects(mtHeads.run({ data: 'toy', budgetMinutes: 1, arch: 'convs3s', out, log: () => {} }), {
      message: /unknown architecture 'convs3s'.*convs2s/,
    });
    await assert.rejects(
      mtHeads.run({ data: 'toy', budgetMinutes: 1, arch: 'convs2s', preset: 'paper', out, log: () => {} }),
      { message: "unknown preset 'paper' for 'convs2s'; presets: tiny, small, wmt" },
    );
    assert.ok(!existsSync(out));
  });
});
