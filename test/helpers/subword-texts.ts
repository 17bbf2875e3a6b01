/**
 * The texts the subword tests train on and throw at the models, shared by the BPE and unigram tests so both
 * kinds face the same input, and the round trip every text must survive.
 */
import assert from 'node:assert/strict';
import { normalizeText } from '../../core/subword/normalize.ts';
import { SPACE_MARK, type SubwordModel } from '../../core/subword/subword-model.ts';
import { scriptOf } from '../../core/subword/unicode-script.ts';
import { SPECIALS } from '../../core/vocab.ts';

/** A few sentences in German, English and French that share words (Hund, Wiese, meadow). */
export const SENTENCES: readonly string[] = [
  'Ein Hund läuft über die Wiese.',
  'Zwei Hunde laufen über eine grüne Wiese.',
  'A dog runs across the meadow.',
  'Two dogs are running across a green meadow.',
  'Ein Mann in einem blauen Hemd spielt Gitarre.',
  'A man in a blue shirt plays the guitar.',
  'Les enfants jouent dans le parc.',
];

/** {@link SENTENCES} twenty times: enough repetition for whole words to become pieces. */
export const TRAINING_CORPUS: readonly string[] = Array.from({ length: 20 }, () => SENTENCES).flat();

/** Text from every corner: each must survive encode→decode as its normalised self, with no `<unk>`. */
export const HOSTILE: readonly string[] = [
  'A Boston Terrier läuft über saftig-grünes Gras 😀🐕‍🦺 👍🏽',
  '漢字とひらがな、한국어 문장.',
  'שלום עולם، مرحبا بالعالم — עברית and العربية mixed',
  'e\u0301 combining, n\u0303, Zalgo: Z\u0336\u0317a\u0334l\u0335g\u0337o',
  'NUL\u0000inside, tab\tand\r\nnewline, BOM\uFEFF, zero-width\u200Bspace',
  'lone surrogates \uD800 and \uDC00 end',
  '▁already▁marked text ▁',
  '<unk> <s> </s> <pad> <0x41> literal specials',
  '   ',
  '',
];

/** Checks that `text` encodes to ids of `model` without `<unk>` or specials, and decodes to its normalised self. */
export function assertRoundTripsWithoutUnk(model: SubwordModel, text: string): void {
  const ids = model.encode(text);
  assert.ok(!ids.includes(SPECIALS.unk.id), 'no <unk>');
  assert.ok(ids.every((id) => Number.isInteger(id) && id >= 4 && id < model.size));
  assert.equal(model.decode(ids), normalizeText(text));
  // the decoded text is well-formed UTF-16, so it is valid UTF-8 on the wire
  assert.equal(Buffer.from(model.decode(ids), 'utf8').toString('utf8'), model.decode(ids));
}

/**
 * Lines in many scripts for comparing with spm_encode, which reads lines: none holds a newline. The first five
 * are Multi30k-like sentences to learn a model from; the rest need byte fallback or look like specials.
 */
export const MIXED_SCRIPTS: readonly string[] = [
  'Ein Boston Terrier läuft über saftig-grünes Gras.',
  'A Boston terrier is running on lush green grass.',
  'Zwei Männer spielen Fußball im Park; ein Kind schaut zu.',
  'Un homme en chemise bleue joue de la guitare.',
  'Muž v modré košili hraje na kytaru.',
  '漢字とひらがな、한국어 문장 😀🐕‍🦺 👍🏽',
  'שלום עולם، مرحبا بالعالم',
  'e\u0301 n\u0303 Z\u0336\u0317a\u0334l\u0335g\u0337o',
  '<unk> <s> </s> <0x41> ⁇',
];

/** As `spm_train` by default: no learned piece mixes scripts (`Wiese.` is `Wiese` and `.`), and `▁` only starts one. */
export function assertPiecesKeepToOneScript(model: SubwordModel): void {
  for (const piece of model.tokens.slice(260)) {
    assert.ok(piece.indexOf(SPACE_MARK, 1) < 0, piece);
    const groups = new Set(
      Array.from(piece.replace(SPACE_MARK, ''))
        .map(scriptOf)
        .filter((s) => s !== null),
    );
    assert.ok(groups.size <= 1, `${piece}: ${[...groups].join(', ')}`);
  }
  assert.deepEqual(model.encodeAsPieces('Wiese.').slice(-1), ['.']);
}
