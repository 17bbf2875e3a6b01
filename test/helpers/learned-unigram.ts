/**
 * Unigram models frost learns from whole corpus files (Multi30k's training sets), cached (cached-fixture.ts):
 * learning an 8000-piece model from Multi30k takes about ten seconds, and the tests that use one check what
 * it encodes, not how it learns. A build keeps the model's `.model` bytes and, for each line a test will
 * encode, the pieces the learned model gave before it was written, so the test can still hold the model
 * read back from its file to the model as learned.
 */
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { normalizeText } from '../../core/subword/normalize.ts';
import { trainUnigram } from '../../core/subword/unigram-trainer.ts';
import { readGzipLines } from '../../train/data/multi30k.ts';
import { cachedFixture } from './cached-fixture.ts';

export interface LearnedUnigramSpec {
  /** The training text: gzipped files of one sentence a line, read in this order. */
  trainFiles: readonly string[];
  vocabSize: number;
  /** Lines (raw: frost-normalised before encoding) whose pieces, as learned, the build records. */
  lines: readonly string[];
}

export interface LearnedUnigram {
  /** The `.model` file's bytes. */
  bytes: Buffer;
  /** The learned model's size (pieces), before it was written. */
  size: number;
  /** The learned model's pieces for each of the spec's lines, frost-normalised, before it was written. */
  learnedPieces: string[][];
}

/** `trainUnigram` on the spec's files, learned once per change of the code or of the files. */
export async function cachedLearnedUnigram(spec: LearnedUnigramSpec): Promise<LearnedUnigram> {
  const dir = await cachedFixture({
    // One name per corpus and size: a build prunes older builds of its own name only.
    name: `learned-unigram-${[...spec.trainFiles.map((f) => basename(f).replace(/\.gz$/, '')), spec.vocabSize].join('-')}`
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-'),
    settings: {
      // Which files, by name and size (the corpus is not edited in place), and a hash of the lines.
      trainFiles: spec.trainFiles.map((f) => [basename(f), statSync(f).size]),
      vocabSize: spec.vocabSize,
      lines: createHash('sha256').update(JSON.stringify(spec.lines)).digest('hex'),
    },
    helpers: ['learned-unigram.ts'],
    async build(into) {
      const text = (await Promise.all(spec.trainFiles.map((f) => readGzipLines(f)))).flat();
      const { model } = trainUnigram(text, { vocabSize: spec.vocabSize });
      await writeFile(join(into, 'learned.model'), model.toBytes());
      const pieces = spec.lines.map((line) => model.encodeAsPieces(normalizeText(line)));
      await writeFile(join(into, 'learned.json'), JSON.stringify({ size: model.size, pieces }));
    },
  });
  const learned = JSON.parse(await readFile(join(dir, 'learned.json'), 'utf8')) as { size: number; pieces: string[][] };
  return { bytes: await readFile(join(dir, 'learned.model')), size: learned.size, learnedPieces: learned.pieces };
}
