import { join } from 'node:path';
import { readVocab } from '../train/prepare-data.ts';
import { RUN_FILES, type TranslationRunConfig } from '../train/run-config.ts';
import { tokenParityInputs } from './parity.ts';
import { validationPairs } from './precision-check.ts';
import { paritySamples } from './sample-data.ts';
import type { ExportParts } from './task-parts.ts';

/** Translation: source and target vocabularies, token sources for parity, validation pairs for the precision check. */
export async function translationExportParts(config: TranslationRunConfig, runDir: string): Promise<ExportParts> {
  const srcVocab = await readVocab(join(runDir, RUN_FILES.srcVocab));
  const tgtVocab = await readVocab(join(runDir, RUN_FILES.tgtVocab));
  return {
    sizes: { srcVocab: srcVocab.size, tgtVocab: tgtVocab.size },
    parityInputs: async (count, pad) => {
      const { samples, synthetic } = await paritySamples(config, srcVocab, tgtVocab, count);
      return tokenParityInputs(samples, pad, synthetic);
    },
    card: {
      task: 'translation',
      source: { lang: config.data.src, tokens: srcVocab.toJSON() },
      target: { lang: config.data.tgt, tokens: tgtVocab.toJSON() },
      tokenizer: config.tokenizer,
      data: { kind: config.data.kind, src: config.data.src, tgt: config.data.tgt },
    },
    precisionPairs: (max) => validationPairs(config, max),
  };
}
