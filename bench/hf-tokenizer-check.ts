/**
 * The proof that export/hf/'s tokenizer.json reproduces frost's subword models: a joint BPE and a joint unigram
 * model learned from Multi30k's training text (de and en), and transformers.js's tokenizer over each model's
 * tokenizer.json must encode all 2,028 validation sentences (de and en) to frost's pieces and decode them back
 * to frost's text. Prints the count per model and the first disagreements; exits 1 on any.
 *
 *   node --import tsx bench/hf-tokenizer-check.ts [--size 8000]
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { trainBpe } from '../core/subword/bpe-trainer.ts';
import type { SubwordModel } from '../core/subword/subword-model.ts';
import { trainUnigram } from '../core/subword/unigram-trainer.ts';
import { readGzipLines } from '../train/data/multi30k.ts';
import { tokenizerMismatches } from '../test/helpers/hf-tokenizer.ts';
import { MULTI30K_DIR } from '../test/helpers/sentencepiece-cli.ts';

const { values } = parseArgs({ options: { size: { type: 'string', default: '8000' } } });
const vocabSize = Number(values.size);
const [trainDe, trainEn, valDe, valEn] = await Promise.all(
  ['train.de.gz', 'train.en.gz', 'val.de.gz', 'val.en.gz'].map((f) => readGzipLines(join(MULTI30K_DIR, f))),
);
const train = [...trainDe!, ...trainEn!];
const val = [...valDe!, ...valEn!];
const trainers: Record<string, () => SubwordModel> = {
  bpe: () => trainBpe(train, { vocabSize }).model,
  unigram: () => trainUnigram(train, { vocabSize }).model,
};
let failed = false;
for (const [kind, learn] of Object.entries(trainers)) {
  const started = Date.now();
  const model = learn();
  const mismatches = tokenizerMismatches(model, val);
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  console.log(
    `${kind} (${model.size} pieces, ${seconds} s): ${val.length - mismatches.length} of ${val.length} validation sentences identical (ids and decoded text)`,
  );
  for (const m of mismatches.slice(0, 5)) console.log(JSON.stringify(m));
  failed ||= mismatches.length > 0;
}
process.exitCode = failed ? 1 : 0;
