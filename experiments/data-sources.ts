import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { detectCorpusKind, DEFAULT_LANGS } from '../train/data/corpus.ts';
import { writeToyCorpus } from '../train/data/fetch.ts';
import { multi30kDir } from '../train/data/paths.ts';

/** A corpus an experiment trains on, and the language pairs it is run on unless told otherwise. */
export interface DataSource {
  dir: string;
  pairs: string[];
}

/**
 * The toy corpus of `--data toy`: a ~200-word lexicon, small enough that a tiny model trains,
 * exports and decodes it within seconds (the experiment's end-to-end test runs on it).
 */
const EXPERIMENT_TOY_CORPUS = { seed: 1, train: 3000, val: 100, test: 100, lexiconScale: 0.2 } as const;

type Resolver = (out: string) => Promise<DataSource>;

const sources = new Map<string, Resolver>([
  ['multi30k', async () => ({ dir: multi30kDir(), pairs: ['de-en', 'en-de'] })],
  [
    'toy',
    async (out) => {
      const dir = join(out, 'data', 'toy');
      // Written once: regenerating would give the same files (it is seeded), but runs read them.
      if (!existsSync(join(dir, 'test.tgt'))) await writeToyCorpus(dir, EXPERIMENT_TOY_CORPUS);
      const { src, tgt } = DEFAULT_LANGS.plain;
      return { dir, pairs: [`${src}-${tgt}`] };
    },
  ],
]);

/**
 * `--data NAME|DIR`: a named source ('multi30k', 'toy'), else a corpus folder whose layout is
 * detected (train/data/corpus.ts).
 * @throws Error naming the folder when it is neither
 */
export async function resolveDataSource(data: string, out: string): Promise<DataSource> {
  const named = sources.get(data);
  if (named) return named(out);
  const dir = resolve(data);
  const kind = detectCorpusKind(dir);
  const { src, tgt } = DEFAULT_LANGS[kind];
  return { dir, pairs: [`${src}-${tgt}`] };
}

/** 'de-en' → { src: 'de', tgt: 'en' }. */
export function parsePair(pair: string): { src: string; tgt: string } {
  const m = /^([^-\s]+)-([^-\s]+)$/.exec(pair);
  if (!m || m[1] === m[2])
    throw new RangeError(`a language pair is 'src-tgt' with two different languages, got '${pair}'`);
  return { src: m[1]!, tgt: m[2]! };
}
