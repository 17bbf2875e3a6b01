import { isSubwordKind } from '../../core/subword/subword-spec.ts';
import { makeBatch, planBatches } from '../data/batches.ts';
import { evaluateBleu } from '../evaluate.ts';
import { prepareData } from '../prepare-data.ts';
import type { TranslationRunConfig } from '../run-config.ts';
import { registerTask } from './registry.ts';
import { seq2seqTask } from './seq2seq.ts';
import { outputLayerSizes } from '../output-support.ts';

/**
 * Translation: a parallel corpus, length-bucketed sentence batches, validation BLEU (sacreBLEU 13a),
 * with chrF and chrF++ logged beside it.
 */
registerTask(
  seq2seqTask<TranslationRunConfig>({
    name: 'translation',
    inputKind: 'tokens',
    async prepare(config, runDir, resuming) {
      const data = await prepareData(config, runDir, resuming);
      const val = config.valSentences ? data.val.slice(0, config.valSentences) : data.val;
      const batchOptions = {
        seed: config.seed,
        maxSentences: config.batch.maxSentences,
        maxTokens: config.batch.maxTokens,
      };
      const output = outputLayerSizes(config, data.tgtVocab);
      const kept = data.tgtVocab.size - (output.excludedTargets?.length ?? 0);
      const outputs =
        kept < data.tgtVocab.size
          ? ` (output: ${kept} pieces the targets use${output.compactOutput ? ', a compact layer of as many rows' : ''})`
          : '';
      return {
        summary: `data: ${data.train.length} training pairs (${data.dropped} dropped by length), vocab ${config.data.src} ${data.srcVocab.size} / ${config.data.tgt} ${data.tgtVocab.size}${outputs}`,
        sizes: {
          srcVocab: data.srcVocab.size,
          tgtVocab: data.tgtVocab.size,
          jointEmbedding: config.vocab.joint,
          ...output,
        },
        epoch(epoch) {
          const plan = planBatches(data.train, batchOptions, epoch);
          return { length: plan.length, batch: (i) => makeBatch(data.train, plan[i]) };
        },
        validate: async (model) => {
          const { bleu, bleuLc, chrf, chrfpp } = await evaluateBleu(
            model,
            data.tgtVocab,
            val,
            config.data.tgt,
            data.tokenizer,
          );
          // The schedule follows the figure the output can earn: cased for subword models (they keep case),
          // lower-cased for word models (their tokeniser lower-cases, so their cased BLEU mostly counts capitals).
          const cased = isSubwordKind(config.vocab.kind);
          return {
            score: cased ? bleu : bleuLc,
            more: { 'BLEU cased': bleu, 'BLEU lc': bleuLc, chrF2: chrf, 'chrF2++': chrfpp },
          };
        },
      };
    },
  }),
);
