/**
 * SentencePiece BPE encoding (google/sentencepiece `src/bpe_model.cc`): start from characters, repeatedly merge
 * the adjacent pair whose concatenation is a piece with the highest score (the leftmost on ties), and spell any
 * character that is not a piece as its UTF-8 bytes (`<0xE2>` ...), so no input ever maps to `<unk>`.
 *
 * Porting note: SentencePiece merges over the whole sentence; frost merges word by word and caches each word's
 * ids. That is the same result whenever no piece has a `▁` after its first character ({@link PieceTable.wordSafe},
 * which frost's trainer guarantees); models without that property (from `spm_train --split_by_whitespace=false`)
 * are encoded sentence-wide, uncached.
 *
 * Isomorphic: no Node APIs.
 */
import { ModelType } from './sentencepiece-proto.ts';
import { forEachWord, pushBytes, segmenters, WordCache, type PieceTable, type Segmenter } from './segmenter.ts';

class BpeSegmenter implements Segmenter {
  readonly #cache = new WordCache<readonly number[]>();

  constructor(private readonly table: PieceTable) {}

  encode(marked: string, out: number[]): void {
    if (!this.table.wordSafe) {
      for (const id of this.#encodeSpan(marked)) out.push(id);
      return;
    }
    forEachWord(marked, (word) => {
      for (const id of this.#cache.get(word, (w) => this.#encodeSpan(w))) out.push(id);
    });
  }

  #encodeSpan(span: string): number[] {
    const symbols = Array.from(span);
    const { normalIds, pieces } = this.table;
    for (;;) {
      let best = -1;
      let bestScore = -Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const id = normalIds.get(symbols[i]! + symbols[i + 1]!);
        if (id !== undefined && pieces[id]!.score > bestScore) {
          best = i;
          bestScore = pieces[id]!.score;
        }
      }
      if (best < 0) break;
      symbols.splice(best, 2, symbols[best]! + symbols[best + 1]!);
    }
    const out: number[] = [];
    for (const symbol of symbols) {
      const id = normalIds.get(symbol);
      if (id !== undefined) out.push(id);
      else pushBytes(symbol, this.table.byteIds, out);
    }
    return out;
  }
}

segmenters.register('bpe', { modelType: ModelType.BPE, create: (table) => new BpeSegmenter(table) });
