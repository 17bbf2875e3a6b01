import { detectCorpusKind, DEFAULT_LANGS } from '../../../../train/data/corpus.ts';
import { runConfigSchema, type RunConfig } from '../../../../train/run-config.ts';
import { registerNewRunTask } from './registry.ts';
import { seq2seqCommon } from './seq2seq.ts';
import type { ConfigContext, NewRunFlags } from './types.ts';

/** A translation run's config: a parallel corpus, its languages, tokeniser and batches. */
function translationRunConfig(flags: NewRunFlags, { arch, subword, vocab }: ConfigContext): RunConfig {
  const { dataDir, maxTokens, common } = seq2seqCommon(flags, arch);
  for (const [flag, value] of [
    ['--encoder', flags.encoder],
    ['--image-size', flags.imageSize],
    ['--image-cache', flags.imageCache],
  ] as const) {
    if (value !== undefined) throw new Error(`${flag} is for --task caption`);
  }
  const kind = detectCorpusKind(dataDir);
  return runConfigSchema.parse({
    task: 'translation',
    ...common,
    data: {
      dir: dataDir,
      kind,
      src: flags.src ?? DEFAULT_LANGS[kind].src,
      tgt: flags.tgt ?? DEFAULT_LANGS[kind].tgt,
    },
    tokenizer: subword ? 'sentencepiece' : kind === 'plain' ? 'whitespace' : 'multi30k',
    vocab: vocab(flags.minFreq ?? (kind === 'plain' ? 1 : 2)),
    // With --max-tokens alone no sentence cap applies (fairseq's): a batch of n sentences has n tokens or more.
    batch: { maxSentences: flags.batchSize ?? maxTokens ?? 64, ...(maxTokens !== undefined ? { maxTokens } : {}) },
  });
}

registerNewRunTask({
  task: 'translation',
  defaultArch: 'rnn-attn',
  jointVocabulary: true,
  compactOutput: true,
  runConfig: translationRunConfig,
});
