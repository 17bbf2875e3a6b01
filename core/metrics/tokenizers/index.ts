/**
 * The tokenisers sacreBLEU applies to detokenised text before counting BLEU n-grams, by the name
 * sacreBLEU's `-tok` gives them.
 *
 * Not here: `ja-mecab` and `ko-mecab` need the MeCab analyser with its IPA (Japanese) or mecab-ko
 * (Korean) dictionary: there is no maintained JS port that loads those dictionaries, and a native
 * binding would make the browser build impossible. `spm`/`flores101`/`flores200` need their
 * SentencePiece models (downloaded by sacreBLEU at first use). See docs/metrics.md.
 *
 * Isomorphic: no Node APIs.
 */
import { tokenize13a, tokenizeChar, tokenizeIntl } from './mteval.ts';
import { tokenizeZh } from './zh.ts';

export { tokenize13a, tokenizeChar, tokenizeIntl } from './mteval.ts';
export { tokenizeZh } from './zh.ts';

/** The BLEU tokenisers by sacreBLEU name; each maps a line to space-separated tokens. */
export const bleuTokenizers = Object.freeze({
  '13a': tokenize13a,
  intl: tokenizeIntl,
  zh: tokenizeZh,
  none: (line: string) => line,
  char: tokenizeChar,
} satisfies Record<string, (line: string) => string>);

/** A tokeniser sacreBLEU and frost both have. */
export type BleuTokenizerName = keyof typeof bleuTokenizers;

/** Looks a tokeniser up by name; the error lists the known names. */
export function getBleuTokenizer(name: string): (line: string) => string {
  if (Object.hasOwn(bleuTokenizers, name)) return bleuTokenizers[name as BleuTokenizerName];
  throw new Error(`bleu: unknown tokenizer '${name}' (known: ${Object.keys(bleuTokenizers).join(', ')})`);
}
