import { SeededRandom } from '../core/random.ts';
import type { Tokenizer } from '../core/text/tokenize.ts';
import type { Vocabulary } from '../core/vocab.ts';
import { loadParallelCorpus } from '../train/data/corpus.ts';
import type { TranslationRunConfig } from '../train/run-config.ts';

export interface ParitySample {
  src: Int32Array;
  tgt: Int32Array;
}

/**
 * Inputs for the export parity check: the first validation pairs of the run's corpus, or, when the
 * corpus is not on this machine, seeded random word sequences, with `synthetic` saying why (the
 * export records it in the card and prints it: a check on made-up inputs is weaker).
 */
export async function paritySamples(
  config: TranslationRunConfig,
  tok: Tokenizer,
  srcVocab: Vocabulary,
  tgtVocab: Vocabulary,
  count: number,
): Promise<{ samples: ParitySample[]; synthetic?: string }> {
  let why: string;
  try {
    const { dir: dataDir, src, tgt, kind } = config.data;
    const corpus = await loadParallelCorpus({ dataDir, src, tgt, kind });
    const samples = corpus.val.slice(0, count).map((p) => ({
      src: srcVocab.encode(tok.tokenize(p.src, config.data.src)),
      tgt: tgtVocab.encode(tok.tokenize(p.tgt, config.data.tgt)),
    }));
    if (samples.length > 0) return { samples };
    why = `${config.data.dir} has no validation pairs`;
  } catch (err) {
    why = `the corpus could not be read (${err instanceof Error ? err.message : String(err)})`;
  }
  const rng = new SeededRandom(config.seed, 'parity-samples');
  const words = (v: Vocabulary) => Int32Array.from({ length: 3 + rng.int(10) }, () => 4 + rng.int(v.size - 4));
  const samples = Array.from({ length: count }, () => ({ src: words(srcVocab), tgt: words(tgtVocab) }));
  return { samples, synthetic: why };
}
