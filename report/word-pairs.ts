import { Registry } from '../core/registry.ts';

/**
 * Word pairs whose target vectors the report compares, by target language. Related pairs should be
 * closer in a learned matrix than control pairs; in a frozen random one all are near 0. Pairs with
 * a word missing from a run's vocabulary are reported as such.
 */
export interface WordPair {
  a: string;
  b: string;
  related: boolean;
}

const pairs = new Registry<readonly WordPair[]>('word-pair list for language');

function registerWordPairs(lang: string, list: readonly WordPair[]): void {
  pairs.register(lang, list);
}

/** The pairs for a target language; none for a language without a list. */
export function wordPairs(lang: string): readonly WordPair[] {
  return pairs.find(lang) ?? [];
}

const related = (a: string, b: string): WordPair => ({ a, b, related: true });
const control = (a: string, b: string): WordPair => ({ a, b, related: false });

registerWordPairs('en', [
  related('dog', 'puppy'),
  related('man', 'woman'),
  related('boy', 'girl'),
  related('street', 'road'),
  control('dog', 'shirt'),
  control('man', 'water'),
]);
registerWordPairs('de', [
  related('hund', 'welpe'),
  related('mann', 'frau'),
  related('junge', 'mädchen'),
  related('straße', 'weg'),
  control('hund', 'hemd'),
  control('mann', 'wasser'),
]);
// The toy corpus's target side (train/data/toy-corpus.ts): determiners that differ only in gender.
registerWordPairs('tgt', [related('lo', 'la'), related('li', 'le'), related('un', 'una')]);
