import { join } from 'node:path';
import { isSubwordKind } from '../../core/subword/subword-spec.ts';
import { getTokenizer, type Tokenizer } from '../../core/text/tokenize.ts';
import { SPECIALS, Vocabulary } from '../../core/vocab.ts';
import { LM_SPLITS, readDefaultLmText, readLmText, type LmSplit, type LmText } from '../data/lm-corpus.ts';
import { streamIds } from '../data/lm-stream.ts';
import { RUN_FILES, type LmRunConfig } from '../run-config.ts';
import { readVocab, writeVocab } from '../run-folder.ts';
import { learnSubwords, runTokenizer } from '../subwords.ts';

/** A language-model run's data: each split as one stream of ids, the vocabulary and tokeniser. */
export interface LmData {
  readonly summary: string;
  readonly vocab: Vocabulary;
  readonly tokenizer: Tokenizer;
  readonly streams: Record<LmSplit, Int32Array>;
}

/** The run's corpus: `data.dir`, or the default one (Multi30k English + Flickr8k captions). */
export function readRunText(config: LmRunConfig): Promise<LmText> {
  return config.data.dir === undefined ? readDefaultLmText() : readLmText(config.data.dir, config.data.split);
}

/**
 * Reads the corpus and builds the vocabulary (words by frequency, or BPE or unigram pieces learned from the
 * training text), or reloads the run's own when `resuming` (a checkpoint's ids must not change).
 * Every line becomes its tokens then `</s>`; the splits are streams of ids.
 */
export async function prepareLmData(config: LmRunConfig, runDir: string, resuming: boolean): Promise<LmData> {
  const text = await readRunText(config);
  const vocabPath = join(runDir, RUN_FILES.tgtVocab);
  const { lang } = config;
  let vocab: Vocabulary;
  let tokenizer: Tokenizer;
  if (resuming) {
    vocab = await readVocab(vocabPath);
    tokenizer = await runTokenizer(config, runDir, { [lang]: vocab });
  } else if (isSubwordKind(config.vocab.kind)) {
    const learned = await learnSubwords(config.vocab, runDir, { [lang]: text.lines.train });
    vocab = learned.vocabs[lang]!;
    tokenizer = learned.tokenizer;
  } else {
    tokenizer = getTokenizer(config.tokenizer);
    vocab = Vocabulary.build(
      text.lines.train.map((l) => tokenizer.tokenize(l, lang)),
      { minFreq: config.vocab.minFreq, maxSize: config.vocab.maxSize },
    );
  }
  if (!resuming) await writeVocab(vocabPath, vocab);
  const streams = Object.fromEntries(
    LM_SPLITS.map((s) => [
      s,
      streamIds(
        text.lines[s].map((l) => Array.from(vocab.encode(tokenizer.tokenize(l, lang)))),
        SPECIALS.eos.id,
      ),
    ]),
  ) as Record<LmSplit, Int32Array>;
  const unk = (ids: Int32Array) => ids.reduce((n, id) => n + (id === SPECIALS.unk.id ? 1 : 0), 0);
  const sizes = LM_SPLITS.map((s) => `${s} ${streams[s].length} tokens (${unk(streams[s])} <unk>)`).join(', ');
  return {
    summary: `data: ${text.name}: ${sizes}; vocab ${vocab.size} ${isSubwordKind(config.vocab.kind) ? `${config.vocab.kind} pieces` : `words (min frequency ${config.vocab.minFreq})`}`,
    vocab,
    tokenizer,
    streams,
  };
}
