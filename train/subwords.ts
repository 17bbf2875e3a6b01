/**
 * Subword vocabularies of a training run (BPE or unigram): learned from the training text when a run starts,
 * written to the run folder as SentencePiece `.model` files (`subword.model` when joint, else
 * `subword.<lang>.model`), and read back on resume, export and report. Word runs get their tokeniser by name.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { trainBpe } from '../core/subword/bpe-trainer.ts';
import { FAIRSEQ_TOKENIZER, loadFairseqTokenizer, type FairseqSpec } from '../core/subword/fairseq-tokenizer.ts';
import { loadMarianTokenizer, MARIAN_TOKENIZER, type MarianSpec } from '../core/subword/marian-tokenizer.ts';
import { NORMALIZATION } from '../core/subword/normalize.ts';
import type { SubwordModel } from '../core/subword/subword-model.ts';
import { isSubwordKind, subwordFileName, type SubwordKind, type SubwordSpec } from '../core/subword/subword-spec.ts';
import { loadSubwordTokenizer, SubwordTokenizer, subwordVocabulary } from '../core/subword/subword-tokenizer.ts';
import { trainUnigram } from '../core/subword/unigram-trainer.ts';
import { getTokenizer, type Tokenizer } from '../core/text/tokenize.ts';
import type { Vocabulary } from '../core/vocab.ts';
import type { VocabConfig } from './run-config.ts';

/** What a run config says about its text: the tokeniser name and the vocabulary settings. */
export interface TextConfig {
  tokenizer: string;
  vocab: VocabConfig;
  /** Imported Marian runs: the SentencePiece files by language (core/subword/marian-tokenizer.ts). */
  marian?: MarianSpec;
  /** Imported fairseq runs: the BPE and its file (core/subword/fairseq-tokenizer.ts). */
  fairseq?: FairseqSpec;
}

/** The trainer of each subword kind: the same sentences and `--vocab-size` give a model of that kind. */
const SUBWORD_TRAINERS: Readonly<
  Record<SubwordKind, (sentences: readonly string[], options: { vocabSize: number }) => { model: SubwordModel }>
> = {
  bpe: trainBpe,
  unigram: trainUnigram,
};

/** The `subword` block for a card: model file by language (names relative to the run or model folder). */
function subwordSpec(kind: SubwordKind, vocab: VocabConfig, langs: readonly string[]): SubwordSpec {
  const files = Object.fromEntries(langs.map((lang) => [lang, subwordFileName(vocab.joint, lang)]));
  return { kind, joint: vocab.joint, vocabSize: vocab.size, files, normalization: { ...NORMALIZATION } };
}

/** The run's subword kind; an Error for a word run (callers check first). */
function subwordKind(vocab: VocabConfig): SubwordKind {
  if (!isSubwordKind(vocab.kind)) throw new Error(`vocabulary kind '${vocab.kind}' has no subword model`);
  return vocab.kind;
}

/**
 * Learns the run's subword model(s) from the training sentences of each language and writes them to `runDir`.
 * A joint vocabulary learns one model from both languages' text. The vocabularies carry each piece's training
 * count in that language's text (the same pieces for both sides of a joint model), as word vocabularies carry
 * word counts.
 */
export async function learnSubwords(
  vocab: VocabConfig,
  runDir: string,
  sentences: Readonly<Record<string, readonly string[]>>,
): Promise<{ tokenizer: SubwordTokenizer; vocabs: Record<string, Vocabulary> }> {
  const langs = Object.keys(sentences);
  const groups = vocab.joint ? [langs] : langs.map((lang) => [lang]);
  const learn = SUBWORD_TRAINERS[subwordKind(vocab)];
  const models: Record<string, SubwordModel> = {};
  const vocabs: Record<string, Vocabulary> = {};
  for (const group of groups) {
    const text = group.flatMap((lang) => sentences[lang]!);
    const { model } = learn(text, { vocabSize: vocab.size });
    await writeFile(join(runDir, subwordFileName(vocab.joint, group[0]!)), model.toBytes());
    for (const lang of group) {
      models[lang] = model;
      // Each side counts its own text: a joint model's pieces that one language never uses have count 0 there,
      // which is what the output layer's exclusions (train/output-support.ts) and the reports read.
      vocabs[lang] = subwordVocabulary(model, sentences[lang]!);
    }
  }
  return { tokenizer: new SubwordTokenizer(models), vocabs };
}

/**
 * The tokeniser a run trained with: a word tokeniser by name, or the run's subword models, each checked against
 * the vocabulary saved beside it and the run's subword kind (a `.model` from another run is refused with its path).
 */
export async function runTokenizer(
  config: TextConfig,
  runDir: string,
  vocabs: Readonly<Record<string, Vocabulary>>,
): Promise<Tokenizer> {
  if (config.tokenizer === MARIAN_TOKENIZER) {
    return loadMarianTokenizer(
      importedBlock(config, runDir, 'marian'),
      (file) => readRunFile(runDir, file),
      (file) => join(runDir, file),
    );
  }
  if (config.tokenizer === FAIRSEQ_TOKENIZER) {
    return loadFairseqTokenizer(
      importedBlock(config, runDir, 'fairseq'),
      (file) => readRunFile(runDir, file),
      (file) => join(runDir, file),
    );
  }
  if (!isSubwordKind(config.vocab.kind)) return getTokenizer(config.tokenizer);
  const spec = subwordSpec(config.vocab.kind, config.vocab, Object.keys(vocabs));
  const tokens = Object.fromEntries(Object.entries(vocabs).map(([lang, v]) => [lang, v.tokens]));
  return loadSubwordTokenizer(
    spec.files,
    tokens,
    async (file) => new Uint8Array(await readFile(join(runDir, file))),
    (file) => join(runDir, file),
    spec.kind,
  );
}

/** Subword runs: the card's `subword` block and the `.model` files' bytes by name; undefined for word runs. */
export async function readSubwords(
  config: TextConfig,
  runDir: string,
  langs: readonly string[],
): Promise<{ spec: SubwordSpec; files: Record<string, Uint8Array> } | undefined> {
  if (!isSubwordKind(config.vocab.kind)) return undefined;
  const spec = subwordSpec(config.vocab.kind, config.vocab, langs);
  return { spec, files: await readRunFiles(runDir, Object.values(spec.files)) };
}

/** An imported run's config block for its tokenizer; a config that names the tokenizer without it is refused. */
function importedBlock<K extends 'marian' | 'fairseq'>(
  config: TextConfig,
  runDir: string,
  block: K,
): NonNullable<TextConfig[K]> {
  const spec = config[block];
  if (spec === undefined)
    throw new Error(`${runDir}: config.json names tokenizer '${config.tokenizer}' but has no '${block}' block`);
  return spec as NonNullable<TextConfig[K]>;
}

/** The bytes of files of the run folder, by name. */
async function readRunFiles(runDir: string, names: Iterable<string>): Promise<Record<string, Uint8Array>> {
  const files: Record<string, Uint8Array> = {};
  for (const file of new Set(names)) files[file] = await readRunFile(runDir, file);
  return files;
}

const readRunFile = async (runDir: string, file: string) => new Uint8Array(await readFile(join(runDir, file)));

/** Imported Marian runs: the card's `marian` block and the SentencePiece files' bytes by name; undefined otherwise. */
export async function readMarianFiles(config: TextConfig, runDir: string) {
  if (config.tokenizer !== MARIAN_TOKENIZER) return undefined;
  const spec: MarianSpec = importedBlock(config, runDir, 'marian');
  return { spec, files: await readRunFiles(runDir, Object.values(spec.files)) };
}

/** Imported fairseq runs: the card's `fairseq` block and its BPE file's bytes by name; undefined otherwise. */
export async function readFairseqFiles(config: TextConfig, runDir: string) {
  if (config.tokenizer !== FAIRSEQ_TOKENIZER) return undefined;
  const spec: FairseqSpec = importedBlock(config, runDir, 'fairseq');
  return { spec, files: await readRunFiles(runDir, spec.file === undefined ? [] : [spec.file]) };
}
