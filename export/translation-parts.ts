import type { TranslationRunConfig } from '../train/run-config.ts';
import type { RunFolder } from '../train/run-folder.ts';
import { tokenParityInputs } from './parity.ts';
import { validationPairs } from './precision-check.ts';
import { paritySamples } from './sample-data.ts';
import { seq2seqExport } from './seq2seq-export.ts';
import { registerTaskExport, type ExportParts } from './task-parts.ts';
import { outputLayerSizes } from '../train/output-support.ts';

/**
 * Translation: source and target vocabularies (and, for subword runs, their `.model` files, copied beside the
 * graphs), token sources for parity, validation pairs for the precision check.
 */
export async function translationExportParts(run: RunFolder<TranslationRunConfig>): Promise<ExportParts> {
  const { config } = run;
  const { src, tgt } = config.data;
  const srcVocab = await run.vocab('src');
  const tgtVocab = await run.vocab('tgt');
  const tokenizer = await run.tokenizer({ [src]: srcVocab, [tgt]: tgtVocab });
  const subwords = await run.subwords([src, tgt]);
  const marian = config.task === 'translation' ? await run.marianFiles() : undefined;
  const fairseq = config.task === 'translation' ? await run.fairseqFiles() : undefined;
  return {
    sizes: {
      srcVocab: srcVocab.size,
      tgtVocab: tgtVocab.size,
      jointEmbedding: config.vocab.joint,
      ...outputLayerSizes(config, tgtVocab),
    },
    parityInputs: async (count, pad) => {
      const { samples, synthetic } = await paritySamples(config, tokenizer, srcVocab, tgtVocab, count);
      return tokenParityInputs(samples, pad, synthetic);
    },
    card: {
      task: 'translation',
      source: { lang: src, tokens: srcVocab.toJSON() },
      target: { lang: tgt, tokens: tgtVocab.toJSON() },
      tokenizer: config.tokenizer,
      ...(subwords ? { subword: subwords.spec } : {}),
      ...(marian ? { marian: marian.spec } : {}),
      ...(fairseq ? { fairseq: fairseq.spec } : {}),
      data: { kind: config.data.kind, src, tgt },
      // Where an imported model's weights came from (train/import/): format, source folder, file hashes.
      ...(config.imported ? { extra: { imported: config.imported } } : {}),
    },
    files: { ...subwords?.files, ...marian?.files, ...fairseq?.files },
    precisionPairs: (max) => validationPairs(config, max),
  };
}

registerTaskExport('translation', seq2seqExport(translationExportParts));
