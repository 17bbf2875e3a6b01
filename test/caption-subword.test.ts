/**
 * Captioning with a subword vocabulary (`--vocab bpe`): the BPE model is learned from the training captions,
 * saved in the run and the export, and the exported captioner writes detokenised, cased text with it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { exportRun } from '../export/export-run.ts';
import { initBackend } from '../train/backend/select.ts';
import type { CaptionImage } from '../train/data/captions.ts';
import { resume, train } from '../train/trainer.ts';
import { cachedToyCaptionData } from './helpers/toy-caption-fixtures.ts';
import { toyCaptionConfig, toyTestBleu4 } from './helpers/toy-caption-run.ts';

let dir: string;
let dataDir: string;
let testImages: CaptionImage[];

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-caption-subword-'));
  // Read-only: the run's image cache is under `dir` (toyCaptionConfig).
  ({ dataDir, testImages } = await cachedToyCaptionData());
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('show-tell on BPE pieces: trains, resumes with the same model file, exports and captions in words', async () => {
  const runDir = join(dir, 'run');
  const config = toyCaptionConfig(dir, dataDir, 'show-tell', {
    optim: { learningRate: 3e-3 },
    epochs: 1,
    valSentences: 8,
    tokenizer: 'sentencepiece',
    vocab: { kind: 'bpe', size: 300 },
  });
  (await train(config, runDir, { quiet: true })).model.params.dispose();
  const modelFile = await readFile(join(runDir, 'subword.en.model'));
  const resumed = await resume(runDir, { epochs: 2 }, { quiet: true });
  resumed.model.params.dispose();
  assert.deepEqual(await readFile(join(runDir, 'subword.en.model')), modelFile, 'resume kept the subword model');
  const modelDir = join(dir, 'model');
  const { card } = await exportRun(runDir, modelDir, { quiet: true });
  assert.equal(card.tokenizer, 'sentencepiece');
  assert.deepEqual(card.subword?.files, { en: 'subword.en.model' });
  assert.ok(card.target.tokens.includes('<0xFF>'), 'byte pieces are in the vocabulary');
  const { captions } = await toyTestBleu4(modelDir, testImages);
  assert.equal(captions.length, testImages.length);
  for (const c of captions) assert.ok(!c.includes('\u2581') && !c.includes('<unk>') && !c.includes('<0x'), c);
});
