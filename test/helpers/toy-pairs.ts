import { Vocabulary } from '../../core/vocab.ts';
import { makeToyCorpus } from '../../train/data/toy-corpus.ts';

/** How much toy corpus to make: its seed and split sizes (the held-out splits default to one pair each). */
export interface ToyPairsOptions {
  seed: number;
  train: number;
  val?: number;
  test?: number;
}

/**
 * The training split of a toy corpus (lexicon scale 0.2) as id pairs, through word vocabularies built from it:
 * what the model tests feed `makeBatch`, and the vocabulary sizes to build a model for them.
 */
export function toyWordPairs(options: ToyPairsOptions) {
  const { seed, train, val = 1, test = 1 } = options;
  const corpus = makeToyCorpus({ seed, train, val, test, lexiconScale: 0.2 });
  const words = (s: string) => s.split(' ');
  const src = Vocabulary.build(corpus.train.map((p) => words(p.src)));
  const tgt = Vocabulary.build(corpus.train.map((p) => words(p.tgt)));
  const pairs = corpus.train.map((p) => ({ src: src.encode(words(p.src)), tgt: tgt.encode(words(p.tgt)) }));
  return { pairs, src, tgt, sizes: { srcVocab: src.size, tgtVocab: tgt.size } };
}

/**
 * The training split of a toy corpus as id pairs through one vocabulary over both sides, and the sizes of a model
 * that keeps one embedding matrix for both (`joint`: the source, target and tied/shared heads' matrix are one) or
 * two (`separate`).
 */
export function toyJointPairs(options: ToyPairsOptions) {
  const { seed, train, val = 1, test = 1 } = options;
  const corpus = makeToyCorpus({ seed, train, val, test, lexiconScale: 0.2 });
  const words = (s: string) => s.split(' ');
  const both = Vocabulary.build(corpus.train.flatMap((p) => [words(p.src), words(p.tgt)]));
  const pairs = corpus.train.map((p) => ({ src: both.encode(words(p.src)), tgt: both.encode(words(p.tgt)) }));
  const separate = { srcVocab: both.size, tgtVocab: both.size };
  return { pairs, joint: { ...separate, jointEmbedding: true }, separate };
}
