import { join } from 'node:path';
import { isSubwordKind } from '../core/subword/subword-spec.ts';
import { getTokenizer, type Tokenizer } from '../core/text/tokenize.ts';
import { Vocabulary } from '../core/vocab.ts';
import { filterByLength, type EncodedPair } from './data/batches.ts';
import { loadParallelCorpus, type Pair } from './data/corpus.ts';
import { RUN_FILES, type TranslationRunConfig } from './run-config.ts';
import { readVocab, writeVocab } from './run-folder.ts';
import { learnSubwords, runTokenizer } from './subwords.ts';

/** A corpus ready to train on: vocabularies and id sequences, plus raw text for BLEU. */
export interface PreparedData {
  /** The run's tokeniser: words by name, or its subword models. */
  tokenizer: Tokenizer;
  srcVocab: Vocabulary;
  tgtVocab: Vocabulary;
  train: EncodedPair[];
  val: { src: Int32Array; ref: string }[];
  test: { src: Int32Array; ref: string }[];
  dropped: number;
}

/**
 * Tokenises the corpus and builds (or, on resume, reloads) the vocabularies from the training split: words
 * with a frequency cut, or subword models learned from the raw training text (train/subwords.ts). The
 * vocabularies (and subword models) are written to the run folder: the ids a checkpoint was trained with must
 * not change because a resumed run rebuilt them.
 */
export async function prepareData(
  config: TranslationRunConfig,
  runDir: string,
  reuseVocab: boolean,
): Promise<PreparedData> {
  const corpus = await loadParallelCorpus({
    dataDir: config.data.dir,
    src: config.data.src,
    tgt: config.data.tgt,
    kind: config.data.kind,
  });
  // Refused before any training: without validation pairs there is no BLEU to keep the best
  // checkpoint by, and the export's parity check has no inputs.
  for (const split of ['train', 'val'] as const) {
    if (corpus[split].length === 0) {
      throw new Error(
        `${config.data.dir}: the ${split} split (${split}.${config.data.src}, ${split}.${config.data.tgt}) has no sentence pairs`,
      );
    }
  }
  const { src, tgt } = config.data;
  const subword = isSubwordKind(config.vocab.kind);

  let srcVocab: Vocabulary;
  let tgtVocab: Vocabulary;
  let tok: Tokenizer;
  if (reuseVocab) {
    srcVocab = await readVocab(join(runDir, RUN_FILES.srcVocab));
    tgtVocab = await readVocab(join(runDir, RUN_FILES.tgtVocab));
    tok = await runTokenizer(config, runDir, { [src]: srcVocab, [tgt]: tgtVocab });
  } else if (subword) {
    const learned = await learnSubwords(config.vocab, runDir, {
      [src]: corpus.train.map((p) => p.src),
      [tgt]: corpus.train.map((p) => p.tgt),
    });
    tok = learned.tokenizer;
    srcVocab = learned.vocabs[src]!;
    tgtVocab = learned.vocabs[tgt]!;
  } else {
    tok = getTokenizer(config.tokenizer);
  }
  const tokenizeSide = (pairs: Pair[], side: 'src' | 'tgt') =>
    pairs.map((p) => tok.tokenize(p[side], side === 'src' ? src : tgt));
  const trainSrc = tokenizeSide(corpus.train, 'src');
  const trainTgt = tokenizeSide(corpus.train, 'tgt');
  if (!reuseVocab && !subword) {
    const opts = { minFreq: config.vocab.minFreq, maxSize: config.vocab.maxSize };
    srcVocab = Vocabulary.build(trainSrc, opts);
    tgtVocab = Vocabulary.build(trainTgt, opts);
  }
  if (!reuseVocab) {
    await writeVocab(join(runDir, RUN_FILES.srcVocab), srcVocab!);
    await writeVocab(join(runDir, RUN_FILES.tgtVocab), tgtVocab!);
  }
  const sv = srcVocab!;
  const tv = tgtVocab!;
  const encoded = trainSrc.map((s, i) => ({ src: sv.encode(s), tgt: tv.encode(trainTgt[i]) }));
  const { kept, dropped } = filterByLength(encoded, config.lengths);
  const evalSplit = (pairs: Pair[]) =>
    pairs.map((p) => ({ src: sv.encode(tok.tokenize(p.src, src)).slice(0, config.lengths.maxSrcLen * 2), ref: p.tgt }));
  return {
    tokenizer: tok,
    srcVocab: sv,
    tgtVocab: tv,
    train: kept,
    val: evalSplit(corpus.val),
    test: evalSplit(corpus.test),
    dropped,
  };
}
