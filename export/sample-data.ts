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
 * corpus is not on this machine, seeded random word sequences (parity needs inputs, not meaning).
 */
export async function paritySamples(
  config: TranslationRunConfig,
  tok: Tokenizer,
  srcVocab: Vocabulary,
  tgtVocab: Vocabulary,
  count: number,
): Promise<ParitySample[]> {
  try {
    const corpus = await loadParallelCorpus({ dataDir: config.data.dir, src: config.data.src, tgt: config.data.tgt, kind: config.data.kind });
    return corpus.val.slice(0, count).map((p) => ({
      src: srcVocab.encode(tok.tokenize(p.src, config.data.src)),
      tgt: tgtVocab.encode(tok.tokenize(p.tgt, config.data.tgt)),
    }));
  } catch {
    const rng = new SeededRandom(config.seed, 'parity-samples');
    const words = (v: Vocabulary) => Int32Array.from({ length: 3 + rng.int(10) }, () => 4 + rng.int(v.size - 4));
    return Array.from({ length: count }, () => ({ src: words(srcVocab), tgt: words(tgtVocab) }));
  }
}
