/**
 * DynamicConv from corpus to ONNX answer on the toy corpus: a tiny model trained with the toy runs' constant
 * learning rate, exported with its incremental decoder (a window of K − 1 convolution inputs per layer and the
 * position), decoded greedily through onnxruntime-node.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { PARITY_TOLERANCE } from '../export/parity.ts';
import { initBackend } from '../train/backend/select.ts';
import { cachedToyExport } from './helpers/toy-exports.ts';
import { toyTestBleu } from './helpers/toy-run.ts';

/** Epochs of the toy corpus (6000 sentences) at a constant 3e-3: test BLEU 95.24 after 2, 99.42 after 3 and 5. */
const EPOCHS = 2;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
});

describe('DynamicConv on the toy corpus', () => {
  test('a tiny DynamicConv reaches >= 90 BLEU on held-out sentences through onnxruntime', async (t) => {
    // Trained once per content hash of the code that trains it (cached-fixture.ts); 50 validation
    // sentences an epoch pick the best checkpoint, the 200 of the test split are what counts.
    const { card, parity, outDir, dataDir } = await cachedToyExport({
      head: 'learned',
      config: { arch: 'dynamicconv', epochs: EPOCHS, valSentences: 50, optim: { learningRate: 3e-3 } },
    });
    const bleu = await toyTestBleu(outDir, dataDir);
    assert.equal(card.arch, 'dynamicconv');
    assert.ok(parity.maxScaledDiff <= PARITY_TOLERANCE, `parity ${parity.maxScaledDiff}`);
    t.diagnostic(`test BLEU ${bleu.toFixed(2)} after ${EPOCHS} epochs`);
    assert.ok(bleu >= 90, `test BLEU ${bleu.toFixed(2)} < 90`);
  });
});
