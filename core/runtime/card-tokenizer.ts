/**
 * The tokeniser a model card names: a word tokeniser by name, or the card's subword models (`subword.files`),
 * read through the runtime's file loader and checked against the card's vocabularies, so a missing, corrupt or
 * mismatched `.model` file is refused at load time with its path or URL.
 *
 * Isomorphic: files come through the caller's loader (fs in Node, fetch in the browser).
 */
import { FAIRSEQ_TOKENIZER, loadFairseqTokenizer } from '../subword/fairseq-tokenizer.ts';
import { loadMarianTokenizer, MARIAN_TOKENIZER } from '../subword/marian-tokenizer.ts';
import { loadSubwordTokenizer, SUBWORD_TOKENIZER } from '../subword/subword-tokenizer.ts';
import { getTokenizer, type Tokenizer } from '../text/tokenize.ts';
import type { ModelCard } from './model-card.ts';

/**
 * @param read returns the bytes of a file the card names (relative to the card); needed for subword models
 * @param locate how a card-relative file is named in errors
 * @throws Error naming the card (unknown tokeniser, subword card without a loader) or the model file at fault
 */
export async function cardTokenizer(
  card: Pick<ModelCard, 'name' | 'subword' | 'tokenizer' | 'target' | 'source' | 'marian' | 'fairseq'>,
  read: ((file: string) => Promise<Uint8Array>) | undefined,
  locate: (file: string) => string,
): Promise<Tokenizer> {
  if (card.tokenizer === MARIAN_TOKENIZER || card.marian !== undefined) return marianTokenizer(card, read, locate);
  if (card.tokenizer === FAIRSEQ_TOKENIZER || card.fairseq !== undefined) {
    if (card.tokenizer !== FAIRSEQ_TOKENIZER || card.fairseq === undefined) {
      throw new Error(
        `model card '${card.name}': tokenizer '${FAIRSEQ_TOKENIZER}' and a 'fairseq' block go together (tokenizer is '${card.tokenizer}', fairseq is ${card.fairseq ? 'there' : 'missing'})`,
      );
    }
    return loadFairseqTokenizer(card.fairseq, read, locate);
  }
  if (card.subword === undefined) {
    try {
      return getTokenizer(card.tokenizer);
    } catch (err) {
      throw new Error(`model card '${card.name}': tokenizer: ${(err as Error).message}`, { cause: err });
    }
  }
  if (card.tokenizer !== SUBWORD_TOKENIZER) {
    throw new Error(
      `model card '${card.name}': a card with 'subword' needs tokenizer '${SUBWORD_TOKENIZER}', not '${card.tokenizer}'`,
    );
  }
  if (read === undefined) {
    throw new Error(
      `model card '${card.name}': its subword models (${Object.values(card.subword.files).join(', ')}) need a file loader`,
    );
  }
  const vocabularies: Record<string, readonly string[]> = { [card.target.lang]: card.target.tokens };
  if (card.source) vocabularies[card.source.lang] = card.source.tokens;
  for (const lang of Object.keys(vocabularies)) {
    if (card.subword.files[lang] === undefined) {
      throw new Error(`model card '${card.name}': subword.files has no model for '${lang}'`);
    }
  }
  return loadSubwordTokenizer(card.subword.files, vocabularies, read, locate, card.subword.kind);
}

/** An imported Marian model's tokeniser: its `marian` block's SentencePiece files (docs/import.md). */
async function marianTokenizer(
  card: Pick<ModelCard, 'name' | 'tokenizer' | 'marian' | 'source' | 'target'>,
  read: ((file: string) => Promise<Uint8Array>) | undefined,
  locate: (file: string) => string,
): Promise<Tokenizer> {
  if (card.tokenizer !== MARIAN_TOKENIZER || card.marian === undefined) {
    throw new Error(
      `model card '${card.name}': tokenizer '${MARIAN_TOKENIZER}' and a 'marian' block go together (tokenizer is '${card.tokenizer}', marian is ${card.marian ? 'there' : 'missing'})`,
    );
  }
  if (read === undefined) {
    throw new Error(
      `model card '${card.name}': its SentencePiece models (${Object.values(card.marian.files).join(', ')}) need a file loader`,
    );
  }
  for (const lang of [card.target.lang, ...(card.source ? [card.source.lang] : [])]) {
    if (card.marian.files[lang] === undefined) {
      throw new Error(`model card '${card.name}': marian.files has no model for '${lang}'`);
    }
  }
  return loadMarianTokenizer(card.marian, read, locate);
}
