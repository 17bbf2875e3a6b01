import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { markovCorpus, type MarkovCorpus } from '../../train/data/markov-corpus.ts';
import { lmConfigSchema, type LmRunConfig, type LmRunConfigInput } from '../../train/run-config.ts';

/** The synthetic Markov corpus the LM tests train on, written as train/valid/test.txt under `dir`. */
export async function writeMarkovCorpus(
  dir: string,
  tokens = { train: 24_000, valid: 3_000, test: 6_000 },
): Promise<{ dataDir: string; corpus: MarkovCorpus }> {
  const corpus = markovCorpus({ seed: 7, words: 24, successors: 4, tokens });
  const dataDir = join(dir, 'markov');
  await mkdir(dataDir, { recursive: true });
  for (const split of ['train', 'valid', 'test'] as const)
    await writeFile(join(dataDir, `${split}.txt`), `${corpus.lines[split].join('\n')}\n`);
  return { dataDir, corpus };
}

/** A tiny lstm-lm run config on `dataDir`; `overrides` replace top-level fields. */
export function tinyLmConfig(dataDir: string, overrides: Partial<LmRunConfigInput> = {}): LmRunConfig {
  return lmConfigSchema.parse({
    task: 'lm',
    arch: 'lstm-lm',
    preset: 'tiny',
    archConfig: { embedding: 32, hidden: 64, layers: 1, dropoutEmbedding: 0, dropoutHidden: 0, dropout: 0 },
    head: { name: 'learned', options: {} },
    seed: 1,
    data: { dir: dataDir },
    batch: { streams: 16, bptt: 20 },
    optim: { learningRate: 1e-2 },
    epochs: 4,
    ...overrides,
  });
}
