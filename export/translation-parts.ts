import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readVocab } from '../train/prepare-data.ts';
import { RUN_FILES, type TranslationRunConfig } from '../train/run-config.ts';
import { runTokenizer, subwordSpec } from '../train/subwords.ts';
import { tokenParityInputs } from './parity.ts';
import { validationPairs } from './precision-check.ts';
import { paritySamples } from './sample-data.ts';
import type { ExportParts } from './task-parts.ts';

/**
 * Translation: source and target vocabularies (and, for subword runs, their `.model` files, copied beside the
 * graphs), token sources for parity, validation pairs for the precision check.
 */
export async function translationExportParts(config: TranslationRunConfig, runDir: string): Promise<ExportParts> {
  const { src, tgt } = config.data;
  const srcVocab = await readVocab(join(runDir, RUN_FILES.srcVocab));
  const tgtVocab = await readVocab(join(runDir, RUN_FILES.tgtVocab));
  const tokenizer = await runTokenizer(config, runDir, { [src]: srcVocab, [tgt]: tgtVocab });
  const subword = config.vocab.kind === 'bpe' ? subwordSpec(config.vocab, [src, tgt]) : undefined;
  const files: Record<string, Uint8Array> = {};
  for (const file of new Set(Object.values(subword?.files ?? {}))) files[file] = new Uint8Array(await readFile(join(runDir, file)));
  return {
    sizes: { srcVocab: srcVocab.size, tgtVocab: tgtVocab.size, jointEmbedding: config.vocab.joint },
    parityInputs: async (count, pad) => tokenParityInputs(await paritySamples(config, tokenizer, srcVocab, tgtVocab, count), pad),
    card: {
      task: 'translation',
      source: { lang: src, tokens: srcVocab.toJSON() },
      target: { lang: tgt, tokens: tgtVocab.toJSON() },
      tokenizer: config.tokenizer,
      ...(subword ? { subword } : {}),
      data: { kind: config.data.kind, src, tgt },
    },
    files,
    precisionPairs: (max) => validationPairs(config, max),
  };
}
