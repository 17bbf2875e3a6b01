/**
 * show-attend-tell on the toy caption corpus, from pixels to onnxruntime captions (see
 * caption-model-e2e.test.ts for show-tell and resume): greedy and beam captions of held-out images.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { exportRun } from '../export/export-run.ts';
import { initBackend } from '../train/backend/select.ts';
import type { CaptionImage } from '../train/data/captions.ts';
import { train } from '../train/trainer.ts';
import { checkModel } from './helpers/onnx-check.ts';
import { toyCaptionConfig, toyTestBleu4, writeToyCaptions } from './helpers/toy-caption-run.ts';

let dir: string;
let dataDir: string;
let testImages: CaptionImage[];

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-caption-sat-'));
  ({ dataDir, testImages } = await writeToyCaptions(dir));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("show-attend-tell: a tiny model's greedy captions of held-out images reach BLEU-4 >= 0.5, beam 3 too", async () => {
  const runDir = join(dir, 'run');
  const result = await train(
    toyCaptionConfig(dir, dataDir, 'show-attend-tell', { optim: { learningRate: 5e-3 }, epochs: 12 }),
    runDir,
    { quiet: true },
  );
  result.model.params.dispose();
  const modelDir = join(dir, 'model');
  const { card, parity } = await exportRun(runDir, modelDir, { quiet: true });
  assert.ok(parity.maxScaledDiff <= 1e-4);
  assert.deepEqual(card.graphs.decoder.memory, ['annotations', 'keys']);
  for (const file of ['encoder.onnx', 'decoder.onnx']) checkModel(join(modelDir, file));
  const greedy = await toyTestBleu4(modelDir, testImages, 1);
  assert.ok(
    greedy.bleu4 >= 0.5,
    `greedy test BLEU-4 ${greedy.bleu4.toFixed(3)} < 0.5; e.g. '${greedy.captions[0]}' for '${testImages[0].captions[0]}'`,
  );
  assert.ok(
    new Set(greedy.captions).size > 3,
    `captions do not depend on the image: ${[...new Set(greedy.captions)].join(' | ')}`,
  );
  // Beam search reorders the attention memory between steps (core/runtime's MemoryStore).
  const beam = await toyTestBleu4(modelDir, testImages, 3);
  assert.ok(beam.bleu4 >= 0.5, `beam-3 test BLEU-4 ${beam.bleu4.toFixed(3)} < 0.5`);
});
