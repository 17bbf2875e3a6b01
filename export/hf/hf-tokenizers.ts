/**
 * The tokenisations the Hugging Face layout can write as tokenizer.json, by the card's `tokenizer`: frost's own
 * subword models (tokenizer-json.ts) and an imported Marian model's SentencePiece pair (marian-tokenizer-json.ts).
 * A new one is an entry here; a card whose tokeniser has none is refused.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cardTokenizer } from '../../core/runtime/card-tokenizer.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import { MARIAN_TOKENIZER, MarianTokenizer } from '../../core/subword/marian-tokenizer.ts';
import { SubwordModel } from '../../core/subword/subword-model.ts';
import { SUBWORD_TOKENIZER } from '../../core/subword/subword-tokenizer.ts';
import {
  marianTokenizerJson,
  marianTokenizerRefusal,
  marianVocabularyRefusal,
  sourcePiecesOutsideVocabulary,
} from './marian-tokenizer-json.ts';
import { tokenizerJson } from './tokenizer-json.ts';

export interface HfTokenizer {
  /** Why the card's vocabularies cannot take the layout's one tokenizer, or undefined. */
  refusal(card: ModelCard): string | undefined;
  /**
   * tokenizer.json for the model in `modelDir`, and what it cannot carry exactly (printed as warnings).
   * @throws Error with a one-line reason when the tokeniser's files cannot be written so
   */
  write(card: ModelCard, modelDir: string): Promise<{ json: Record<string, unknown>; warnings: string[] }>;
}

const readIn = (dir: string) => async (file: string) => new Uint8Array(await readFile(join(dir, file)));

/** The refusal of a tokeniser the layout cannot write. */
export function tokenizerRefusal(name: string): string {
  return (
    `--hf: tokenizer '${name}' cannot be written as tokenizer.json (the Hugging Face layout needs a subword ` +
    "vocabulary, frost's bpe or unigram or an imported Marian model's)"
  );
}

export const HF_TOKENIZERS: Readonly<Record<string, HfTokenizer>> = {
  [SUBWORD_TOKENIZER]: {
    refusal: (card) =>
      card.subword === undefined
        ? tokenizerRefusal(card.tokenizer)
        : !card.subword.joint
          ? '--hf: separate source and target vocabularies (the Hugging Face layout has one tokenizer for both; ' +
            'train with a joint vocabulary)'
          : undefined,
    async write(card, modelDir) {
      const file = join(modelDir, Object.values(card.subword!.files)[0]!);
      return { json: tokenizerJson(SubwordModel.fromBytes(await readFile(file), file)), warnings: [] };
    },
  },
  [MARIAN_TOKENIZER]: {
    refusal: marianVocabularyRefusal,
    async write(card, modelDir) {
      const tokenizer = await cardTokenizer(card, readIn(modelDir), (f) => join(modelDir, f));
      if (!(tokenizer instanceof MarianTokenizer)) throw new Error(`--hf: '${card.name}' has no Marian tokeniser`);
      const refusal = marianTokenizerRefusal(tokenizer);
      if (refusal !== undefined) throw new Error(refusal);
      const outside = sourcePiecesOutsideVocabulary(card, tokenizer);
      const warnings =
        outside.length === 0
          ? []
          : [
              `--hf: ${outside.length} source pieces are not in the vocabulary (${outside.slice(0, 5).join(' ')}…); ` +
                'frost reads them as <unk>, tokenizer.json cuts their text into smaller pieces',
            ];
      return { json: marianTokenizerJson(card, tokenizer), warnings };
    },
  },
};
