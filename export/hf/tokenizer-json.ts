/**
 * `tokenizer.json` (Hugging Face tokenizers' format) and `tokenizer_config.json` for a frost subword model, so
 * that transformers.js and `transformers`' fast tokenizers cut text into frost's pieces and join them back.
 *
 * - normaliser: frost's normalize.ts as tokenizers steps: NFC; every run of White_Space, control characters
 *   and `▁` becomes one space; one leading and one trailing space go (after the runs collapsed, that trims).
 * - pre-tokeniser: Metaspace, `▁` for each space and one in front, not split into words (frost's unigram
 *   Viterbi runs over the whole sentence, and its BPE gives the same pieces either way).
 * - decoder: `▁` back to spaces, byte pieces read as UTF-8, the leading space dropped.
 * - `<pad>`, `<unk>`, `<s>`, `</s>` are special added tokens (skipped when decoding with skip_special_tokens).
 * - No post-processor: frost's encoder reads a source's pieces without `</s>`.
 *
 * What it cannot carry (docs/huggingface.md): frost replaces lone UTF-16 surrogates by U+FFFD, which tokenizers'
 * Rust strings cannot hold; a special's text (`<s>`) typed in a sentence is that special here, pieces in frost.
 */
import { NORMALIZATION } from '../../core/subword/normalize.ts';
import { SPACE_MARK, type SubwordModel } from '../../core/subword/subword-model.ts';
import { SPECIALS } from '../../core/vocab.ts';
import { tokenizerModel } from './tokenizer-model.ts';

const SPECIAL_LIST = [SPECIALS.pad, SPECIALS.unk, SPECIALS.bos, SPECIALS.eos];

export function tokenizerJson(model: SubwordModel): Record<string, unknown> {
  // The one normalisation frost has; a new one would need its steps here.
  if (NORMALIZATION.unicode !== 'NFC' || NORMALIZATION.lowercase) throw new Error('unexpected subword normalisation');
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_LIST.map(({ id, token }) => ({
      id,
      content: token,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'NFC' },
        { type: 'Replace', pattern: { Regex: `[\\p{White_Space}\\p{Cc}${SPACE_MARK}]+` }, content: ' ' },
        { type: 'Replace', pattern: { Regex: '^ | $' }, content: '' },
      ],
    },
    pre_tokenizer: { type: 'Metaspace', replacement: SPACE_MARK, prepend_scheme: 'always', split: false },
    post_processor: null,
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: SPACE_MARK }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    model: tokenizerModel(model),
  };
}

export function tokenizerConfig(maxLength: number): Record<string, unknown> {
  return {
    tokenizer_class: 'PreTrainedTokenizerFast',
    model_max_length: maxLength,
    pad_token: SPECIALS.pad.token,
    unk_token: SPECIALS.unk.token,
    bos_token: SPECIALS.bos.token,
    eos_token: SPECIALS.eos.token,
    // frost's pieces decode to the text as it was; no "spaces before punctuation" clean-up.
    clean_up_tokenization_spaces: false,
    padding_side: 'right',
  };
}
