/**
 * export/hf/'s tokenizer.json read by transformers.js's tokenizer cuts text into frost's pieces and joins them
 * back into frost's text: a sample of Multi30k's validation set here (bench/hf-tokenizer-check.ts runs all
 * 2,028 sentences on 8000-piece models), and hostile text, where the differences that tokenizer.json or
 * transformers.js cannot avoid are pinned down as docs/huggingface.md states them.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { trainBpe } from '../core/subword/bpe-trainer.ts';
import type { SubwordModel } from '../core/subword/subword-model.ts';
import { trainUnigram } from '../core/subword/unigram-trainer.ts';
import { SPECIALS } from '../core/vocab.ts';
import { readGzipLines } from '../train/data/multi30k.ts';
import { hfTokenizer, tokenizerMismatches } from './helpers/hf-tokenizer.ts';
import { MULTI30K_DIR, MULTI30K_SKIP } from './helpers/sentencepiece-cli.ts';
import { HOSTILE, TRAINING_CORPUS } from './helpers/subword-texts.ts';

const TRAIN = 3000;
const VAL = 300;
const trainers: Record<string, (sentences: string[], vocabSize: number) => SubwordModel> = {
  bpe: (sentences, vocabSize) => trainBpe(sentences, { vocabSize }).model,
  unigram: (sentences, vocabSize) => trainUnigram(sentences, { vocabSize }).model,
};

describe('tokenizer.json on Multi30k', { skip: MULTI30K_SKIP }, () => {
  for (const [kind, learn] of Object.entries(trainers)) {
    test(`${kind}: ${VAL} validation sentences per language encode to frost's ids and decode to frost's text`, async () => {
      const read = (f: string) => readGzipLines(join(MULTI30K_DIR, f));
      const [trainDe, trainEn, valDe, valEn] = await Promise.all(
        ['train.de.gz', 'train.en.gz', 'val.de.gz', 'val.en.gz'].map(read),
      );
      const model = learn([...trainDe!.slice(0, TRAIN), ...trainEn!.slice(0, TRAIN)], 2000);
      const mismatches = tokenizerMismatches(model, [...valDe!.slice(0, VAL), ...valEn!.slice(0, VAL)]);
      assert.deepEqual(mismatches, []);
    });
  }
});

describe('tokenizer.json on hostile text', () => {
  const bpe = trainBpe(TRAINING_CORPUS, { vocabSize: 320 }).model;
  const unigram = trainUnigram(TRAINING_CORPUS, { vocabSize: 320 }).model;
  const LITERAL_SPECIALS = HOSTILE.find((t) => t.startsWith('<unk>'))!;
  const BOM = HOSTILE.find((t) => t.includes('\uFEFF'))!;

  test("bpe: every text but two gives frost's ids and text (byte fallback included)", () => {
    const mismatches = tokenizerMismatches(bpe, HOSTILE);
    assert.deepEqual(
      mismatches.map((m) => m.sentence),
      [BOM, LITERAL_SPECIALS],
    );
    // A U+FEFF spelled in bytes: the ids agree, transformers.js's UTF-8 decoding drops it as a byte-order mark.
    const bom = mismatches[0]!;
    assert.deepEqual(bom.hf.ids, bom.frost.ids);
    assert.equal(bom.hf.text, bom.frost.text.replace('\uFEFF', ''));
    // A special's text typed in a sentence is that special for a Hugging Face tokenizer; frost spells it out.
    assert.deepEqual(mismatches[1]!.hf.ids.slice(0, 4), [SPECIALS.unk.id, SPECIALS.bos.id, SPECIALS.eos.id, 0]);
  });

  test('unigram: transformers.js has no byte fallback for unigram models, so a character that is no piece is <unk>', () => {
    const tokenizer = hfTokenizer(unigram);
    const text = 'Ein Hund 😀 läuft.';
    const ids = unigram.encode(text);
    const hfIds = tokenizer.encode(text, { add_special_tokens: false });
    assert.ok(
      ids.some((id) => unigram.isByte(id)),
      'the emoji is spelled in bytes by frost',
    );
    assert.ok(
      hfIds.includes(SPECIALS.unk.id),
      `transformers.js now gives ${hfIds.join(' ')}: update docs/huggingface.md`,
    );
    // The text made only of the model's pieces agrees.
    assert.deepEqual(tokenizerMismatches(unigram, ['Ein Hund läuft über die Wiese.']), []);
  });
});
