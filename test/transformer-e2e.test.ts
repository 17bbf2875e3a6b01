import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { exportRun } from '../export/export-run.ts';
import { PARITY_TOLERANCE } from '../export/parity.ts';
import { initBackend } from '../train/backend/select.ts';
import { train } from '../train/trainer.ts';
import { toyRunConfig, toyTestBleu, writeToyData } from './helpers/toy-run.ts';

/**
 * Epochs of the toy corpus (6000 sentences, 94 batches each) the tiny pre-norm model needs at a
 * constant 3e-3. Test BLEU after 6 epochs on the development machine, with the unfused layer norm:
 * 92.79 (4e-3: 92.97, 5e-3: 91.63, 6e-3: 87.41); the best checkpoint is from epoch 5 or 6, a 7th
 * epoch changed nothing. With the fused layer norm (56f1e78: the same values to float32 rounding, a
 * different trajectory) 3e-3 gives 91.65 and 4e-3 88.43 (88.14 after 8 epochs): 4e-3 sits at the
 * edge where rounding decides, 3e-3 does not.
 */
const EPOCHS = 6;
let dir: string;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-transformer-e2e-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the Transformer from corpus to ONNX answer on the toy corpus', () => {
  test('a tiny Transformer reaches >= 90 BLEU on held-out sentences through onnxruntime', async (t) => {
    const dataDir = await writeToyData(join(dir, 'toy'));
    const runDir = join(dir, 'run');
    // 50 validation sentences per epoch pick the best checkpoint; decoding all 200 would add a third to the time.
    const config = toyRunConfig(dataDir, 'learned', {
      arch: 'transformer',
      epochs: EPOCHS,
      valSentences: 50,
      optim: { learningRate: 3e-3 },
    });
    const result = await train(config, runDir, { quiet: true });
    result.model.params.dispose();
    const modelDir = join(dir, 'model');
    const { card, parity } = await exportRun(runDir, modelDir, { quiet: true });
    assert.equal(card.arch, 'transformer');
    assert.ok(parity.maxScaledDiff <= PARITY_TOLERANCE, `parity ${parity.maxScaledDiff}`);
    const bleu = await toyTestBleu(modelDir, dataDir);
    t.diagnostic(`test BLEU ${bleu.toFixed(2)} after ${EPOCHS} epochs`);
    assert.ok(bleu >= 90, `test BLEU ${bleu.toFixed(2)} < 90`);
  });
});
