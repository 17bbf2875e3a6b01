/**
 * show-attend-tell on the toy caption corpus, from pixels to onnxruntime captions (see
 * caption-model-e2e.test.ts for show-tell and resume): greedy and beam captions of held-out images.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkModel } from './helpers/onnx-check.ts';
import { cachedToyCaptionModel } from './helpers/toy-caption-fixtures.ts';
import { toyTestBleu4 } from './helpers/toy-caption-run.ts';

test("show-attend-tell: a tiny model's greedy captions of held-out images reach BLEU-4 >= 0.5, beam 3 too", async () => {
  // Trained and exported once per version of the sources that make it (cached-fixture.ts).
  const { modelDir, card, testImages } = await cachedToyCaptionModel({
    arch: 'show-attend-tell',
    extra: { optim: { learningRate: 5e-3 }, epochs: 12 },
  });
  assert.ok((card.config.parity as { maxScaledDiff: number }).maxScaledDiff <= 1e-4);
  for (const file of ['encoder.onnx', 'decoder.onnx']) checkModel(join(modelDir, file));
  assert.deepEqual(card.graphs.decoder.memory, ['annotations', 'keys']);
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
