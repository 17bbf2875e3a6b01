/**
 * Captioning from data set to onnxruntime answer, on the synthetic toy corpus (coloured shapes,
 * train/data/toy-captions.ts): a tiny model learns it well enough that greedy captions of held-out
 * images, decoded through the exported graphs, match the references (show-tell here, with resume;
 * show-attend-tell in caption-model-sat-e2e.test.ts, to keep each file within a minute).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModelDir } from '../core/runtime/load-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import { initBackend } from '../train/backend/select.ts';
import { resume, train } from '../train/trainer.ts';
import { checkModel } from './helpers/onnx-check.ts';
import { toyCaptionModel } from './helpers/toy-caption-model.ts';
import { cachedToyCaptionRun, type ToyCaptionSpec } from './helpers/toy-caption-fixtures.ts';
import { toyCaptionConfig, toyTestBleu4 } from './helpers/toy-caption-run.ts';

let dir: string;
before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-caption-e2e-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('show-tell on the toy corpus, from pixels to onnxruntime captions', () => {
  // A model that ignored the pixels could learn only the phrasing: the one caption it would give
  // every image scores BLEU-4 ≈ 0.3 here; captioning colours, shapes and backgrounds scores more.
  test("a tiny model's greedy captions of held-out images reach BLEU-4 >= 0.45", async () => {
    // The shared toy model is this run (show-tell, lr 3e-3, 14 epochs), trained and exported by the current sources.
    const { modelDir, testImages } = await toyCaptionModel();
    const card = JSON.parse(await readFile(join(modelDir, 'model-card.json'), 'utf8')) as ModelCard;
    assert.ok((card.config.parity as { maxScaledDiff: number }).maxScaledDiff <= 1e-4);
    for (const file of ['encoder.onnx', 'decoder.onnx']) checkModel(join(modelDir, file));
    assert.equal(card.task, 'caption');
    assert.deepEqual(card.image, { size: 32, mean: [0.5, 0.5, 0.5], std: [0.25, 0.25, 0.25] });
    assert.equal(card.tokenizer, 'caption');
    assert.equal(card.source, undefined);
    assert.deepEqual(card.graphs.encoder.inputs, ['pixels']);
    const { bleu4, captions } = await toyTestBleu4(modelDir, testImages);
    assert.ok(
      bleu4 >= 0.45,
      `test BLEU-4 ${bleu4.toFixed(3)} < 0.45; e.g. '${captions[0]}' for '${testImages[0].captions[0]}'`,
    );
    assert.ok(new Set(captions).size > 3, `captions do not depend on the image: ${[...new Set(captions)].join(' | ')}`);
    // A translation runtime refuses the caption model rather than feeding it token ids.
    const plain = await loadModelDir(modelDir);
    await assert.rejects(plain.translate(['a red circle']), /is a caption model; its encoder reads images/);
    await plain.release();
  });

  test('a run resumed from its epoch-1 checkpoint ends where an uninterrupted 2-epoch run does', async () => {
    const recipe = { optim: { learningRate: 3e-3 }, valSentences: 8 };
    // The uninterrupted run is cached (trained by the current sources); the interrupted one trains here, on its data.
    const straightSpec: ToyCaptionSpec = { arch: 'show-tell', extra: { ...recipe, epochs: 2 } };
    const { dataDir, runDir: straightDir, trained: straight } = await cachedToyCaptionRun(straightSpec);
    const config = toyCaptionConfig(dir, dataDir, 'show-tell', recipe);
    const resumedDir = join(dir, 'resumed');
    (await train({ ...config, epochs: 1 }, resumedDir, { quiet: true })).model.params.dispose();
    const vocabBefore = await readFile(join(resumedDir, 'vocab.tgt.json'), 'utf8');
    const resumed = await resume(resumedDir, { epochs: 2 }, { quiet: true });
    resumed.model.params.dispose();
    assert.equal(resumed.epochs, 2);
    assert.equal(resumed.steps, straight.steps);
    assert.equal(
      await readFile(join(resumedDir, 'vocab.tgt.json'), 'utf8'),
      vocabBefore,
      'resume rebuilt the vocabulary',
    );
    const lines = async (run: string) =>
      (await readFile(join(run, 'metrics.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { trainLoss: number; valBleu: number });
    const [a, b] = [await lines(straightDir), await lines(resumedDir)];
    assert.equal(b.length, 2);
    assert.ok(
      Math.abs(a[1].trainLoss - b[1].trainLoss) < 1e-6,
      `epoch-2 loss ${b[1].trainLoss} after resume, ${a[1].trainLoss} without`,
    );
    assert.equal(b[1].valBleu, a[1].valBleu);
  });
});
