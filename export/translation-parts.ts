import type { TranslationRunConfig } from '../train/run-config.ts';
import type { RunFolder } from '../train/run-folder.ts';
import { tokenParityInputs } from './parity.ts';
import { validationPairs } from './precision-check.ts';
import { paritySamples } from './sample-data.ts';
import type { ExportParts } from './task-parts.ts';

/** Translation: source and target vocabularies, token sources for parity, validation pairs for the precision check. */
export async function translationExportParts(run: RunFolder<TranslationRunConfig>): Promise<ExportParts> {
  const { config } = run;
  const srcVocab = await run.vocab('src');
  const tgtVocab = await run.vocab('tgt');
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
