/**
 * The text normalisation that runs before a subword model sees a sentence. It is explicit (a model card
 * records {@link NormalizationSpec}) and deliberately small: casing, accents and punctuation are kept as the
 * user typed them, so the model learns and emits cased text.
 *
 * The subword model file itself says `identity` normalisation (see sentencepiece-model.ts): frost does these
 * steps in code, before encoding, so any SentencePiece implementation given already-normalised text agrees.
 *
 * Isomorphic: no Node APIs.
 */

/** What {@link normalizeText} did to a sentence; stored in the model card as written. */
export interface NormalizationSpec {
  /** Unicode normalisation form applied. NFC keeps compatibility characters (ﬁ, ², full-width) distinct. */
  readonly unicode: 'NFC';
  /** Lone UTF-16 surrogates (possible in JSON strings) become U+FFFD, so every output is valid UTF-8. */
  readonly loneSurrogates: 'replace';
  /** Control characters (Cc, NUL included) and every Unicode White_Space character become a space. */
  readonly controlsAndSpaces: 'space';
  /** Runs of spaces collapse to one; leading and trailing spaces go (as SentencePiece's default does). */
  readonly collapseSpaces: true;
  /** U+2581 (▁, the piece-boundary mark) in the input becomes a space, so it cannot fake a word boundary. */
  readonly spaceMark: 'space';
  /** Casing is never changed. */
  readonly lowercase: false;
}

/** The one normalisation frost's subword models use. */
export const NORMALIZATION: NormalizationSpec = Object.freeze({
  unicode: 'NFC',
  loneSurrogates: 'replace',
  controlsAndSpaces: 'space',
  collapseSpaces: true,
  spaceMark: 'space',
  lowercase: false,
});

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
// \p{White_Space} covers tab, newline, NBSP, U+2028 etc.; \p{Cc} the C0/C1 controls (NUL, DEL, ...).
const SPACE_LIKE = /[\p{White_Space}\p{Cc}\u2581]+/gu;

/**
 * Applies {@link NORMALIZATION}: the result is well-formed, NFC, single-spaced and trimmed.
 *
 * @example normalizeText('  Ein\tHund\u0000 läuft ') // 'Ein Hund läuft'
 */
export function normalizeText(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD').normalize('NFC').replace(SPACE_LIKE, ' ').trim();
}
