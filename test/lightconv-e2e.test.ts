/**
 * DynamicConv from corpus to ONNX answer on the toy corpus: a tiny model trained with the toy runs' constant
 * learning rate, exported with its incremental decoder (a window of K − 1 convolution inputs per layer and the
 * position), decoded greedily through onnxruntime-node.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PARITY_TOLERANCE } from '../export/parity.ts';
import { initBackend } from '../train/backend/select.ts';
import { toyBleuRun } from './helpers/toy-run.ts';

/** Epochs of the toy corpus (6000 sentences) at a constant 3e-3: test BLEU 95.24 after 2, 99.42 after 3 and 5. */
const EPOCHS = 2;
let dir: string;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-lightconv-e2e-'));
});

after(() => rm(dir, { recursive: true, force: true }));

describe('DynamicConv on the toy corpus', () => {
  test('a tiny DynamicConv reaches >= 90 BLEU on held-out sentences through onnxruntime', async (t) => {
    const { card, parity, bleu } = await toyBleuRun(dir, 'dynamicconv', { epochs: EPOCHS, learningRate: 3e-3 });
    assert.equal(card.arch, 'dynamicconv');
    assert.ok(parity <= PARITY_TOLERANCE, `parity ${parity}`);
    t.diagnostic(`test BLEU ${bleu.toFixed(2)} after ${EPOCHS} epochs`);
    assert.ok(bleu >= 90, `test BLEU ${bleu.toFixed(2)} < 90`);
  });
});
