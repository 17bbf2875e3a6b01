/**
 * `tokenizer.json` for an imported Marian model (tokenizer 'marian', core/subword/marian-tokenizer.ts): the source
 * language's SentencePiece model over the model's one vocabulary, so that transformers.js cuts a source sentence into
 * the ids frost's Marian tokeniser gives, and joins target ids back into frost's text.
 *
 * - model: Unigram over the model's vocabulary in frost's id order. A piece the source model has keeps its score;
 *   every other entry (the specials, pieces only the target model has) is written with the lowest source score, so
 *   the unknown-character score tokenizers derives (lowest − 10) is SentencePiece's. A target-only piece is written
 *   behind a control character the normaliser removes, so no source text can match it (as in SentencePiece, which
 *   has no such piece), and the decoder drops that character again; unless all its characters are unknown to the
 *   source model, whose run of them SentencePiece returns as one piece that the vocabulary reads by name (a longer
 *   run of them is one `<unk>` in frost and Marian, and that piece plus the rest here).
 * - normaliser: the source model's rule as frost applies it (nmt_* control and space handling, NFKC, lower-casing for
 *   `_cf`, then extra spaces removed and the ends trimmed).
 * - pre-tokeniser: Metaspace, `▁` for each space and one in front when the model adds a dummy prefix.
 * - post-processor: `</s>` after the source, as MarianTokenizer and frost's encoder read it.
 * - decoder: the marker dropped, `▁` back to spaces, the leading space dropped (SentencePiece's DecodePieces).
 * - a language code (`>>fra<<`) in the vocabulary is an added token: frost reads one only at the very start.
 */
import type { ModelCard } from '../../core/runtime/model-card.ts';
import { NMT_REMOVED, NMT_SPACES, TRIMMED, type MarianTokenizer } from '../../core/subword/marian-tokenizer.ts';
import { SPACE_MARK } from '../../core/subword/segmenter.ts';

/** Marks a target-only piece: a C0 control, which every `nmt_*` normaliser removes before the pieces are matched. */
const TARGET_ONLY_MARK = '\u0001';
const LANGUAGE_CODE = /^>>.+<<$/;

/** Why the card's vocabularies cannot take one tokenizer.json, or undefined when they can. */
export function marianVocabularyRefusal(card: Pick<ModelCard, 'source' | 'target'>): string | undefined {
  const target = card.target.tokens;
  const source = card.source?.tokens ?? [];
  if (source.length !== target.length || source.some((t, i) => t !== target[i])) {
    return '--hf: the source and target vocabularies differ (the Hugging Face layout has one tokenizer for both)';
  }
  return undefined;
}

/** Why the source SentencePiece model cannot be written as tokenizer.json, or undefined when it can. */
export function marianTokenizerRefusal(tokenizer: MarianTokenizer): string | undefined {
  const source = tokenizer.model(tokenizer.source);
  if (!source.normaliser.startsWith('nmt_')) {
    return (
      `--hf: the source SentencePiece model's normaliser '${source.normaliser}' keeps control characters, and ` +
      "tokenizer.json marks the target's own pieces with one (nmt_nfkc, Marian's default, removes them)"
    );
  }
  if (!source.spec.escape_whitespaces) {
    return "--hf: the source SentencePiece model does not write spaces as '▁', which tokenizer.json's Metaspace does";
  }
  return undefined;
}

/** Source pieces the model's vocabulary lacks: frost reads them as `<unk>`; tokenizer.json cannot hold them. */
export function sourcePiecesOutsideVocabulary(card: Pick<ModelCard, 'target'>, tokenizer: MarianTokenizer): string[] {
  const vocabulary = new Set(card.target.tokens);
  return [...tokenizer.model(tokenizer.source).scores.keys()].filter((p) => !vocabulary.has(p));
}

export function marianTokenizerJson(
  card: Pick<ModelCard, 'target' | 'specials'>,
  tokenizer: MarianTokenizer,
): Record<string, unknown> {
  const source = tokenizer.model(tokenizer.source);
  const { tokens } = card.target;
  const special = new Set([card.specials.pad, card.specials.unk, card.specials.bos, card.specials.eos]);
  // A loop, not Math.min(...): an opus-mt model has tens of thousands of pieces.
  let lowest = Infinity;
  for (const score of source.scores.values()) lowest = Math.min(lowest, score);
  const vocab = tokens.map((t, id): [string, number] => {
    if (special.has(id) || LANGUAGE_CODE.test(t)) return [t, lowest];
    const score = source.scores.get(t);
    if (score !== undefined) return [t, score];
    // SentencePiece gives a run of characters it does not know as one piece of their text, which the vocabulary
    // then reads by name: such a target piece stays reachable.
    const unknownRun = Array.from(t).every((ch) => !source.scores.has(ch));
    return [unknownRun ? t : TARGET_ONLY_MARK + t, lowest];
  });
  const added = (id: number, isSpecial: boolean) => ({
    id,
    content: tokens[id],
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: isSpecial,
  });
  const eos = tokens[card.specials.eos]!;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      ...[...special].sort((a, b) => a - b).map((id) => added(id, true)),
      ...tokens.flatMap((t, id) => (LANGUAGE_CODE.test(t) && !special.has(id) ? [added(id, false)] : [])),
    ],
    normalizer: {
      type: 'Sequence',
      normalizers: normalizerSteps(source.normaliser, source.spec.remove_extra_whitespaces),
    },
    pre_tokenizer: {
      type: 'Metaspace',
      replacement: SPACE_MARK,
      prepend_scheme: source.spec.add_dummy_prefix ? 'always' : 'never',
      split: false,
    },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: eos, type_id: 0 } }],
      pair: [
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: eos, type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } },
        { SpecialToken: { id: eos, type_id: 0 } },
      ],
      special_tokens: { [eos]: { id: eos, ids: [card.specials.eos], tokens: [eos] } },
    },
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: TARGET_ONLY_MARK }, content: '' },
        { type: 'Replace', pattern: { String: SPACE_MARK }, content: ' ' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    model: { type: 'Unigram', unk_id: card.specials.unk, byte_fallback: false, vocab },
  };
}

/** frost's MarianSentencePiece.normalize for an `nmt_*` rule (the only ones written), as tokenizers normalisers. */
function normalizerSteps(rule: string, removeExtraWhitespaces: boolean): Array<Record<string, unknown>> {
  return [
    { type: 'Replace', pattern: { Regex: NMT_REMOVED }, content: '' },
    { type: 'Replace', pattern: { Regex: NMT_SPACES }, content: ' ' },
    { type: 'NFKC' },
    ...(rule.endsWith('_cf') ? [{ type: 'Lowercase' }] : []),
    ...(removeExtraWhitespaces
      ? [
          { type: 'Replace', pattern: { Regex: ' +' }, content: ' ' },
          { type: 'Replace', pattern: { Regex: `^${TRIMMED}+|${TRIMMED}+$` }, content: '' },
        ]
      : []),
  ];
}
