/**
 * frost's subword model against transformers.js's tokenizer loading the tokenizer.json export/hf/ writes from
 * it: each sentence must encode to frost's ids and decode back to frost's text. Used by test/hf-tokenizer.test.ts
 * (a sample) and bench/hf-tokenizer-check.ts (all of Multi30k's validation set).
 */
import { PreTrainedTokenizer } from '@huggingface/transformers';
import type { SubwordModel } from '../../core/subword/subword-model.ts';
import { tokenizerConfig, tokenizerJson } from '../../export/hf/tokenizer-json.ts';

/** A sentence the two tokenisers disagree on, and what each made of it. */
export interface TokenizerMismatch {
  sentence: string;
  frost: { ids: number[]; text: string };
  hf: { ids: number[]; text: string };
}

/** transformers.js's tokenizer over `model`'s tokenizer.json, as `AutoTokenizer` builds it from the files. */
export function hfTokenizer(model: SubwordModel): PreTrainedTokenizer {
  // A JSON round trip, as the files are read.
  const json = JSON.parse(JSON.stringify(tokenizerJson(model))) as object;
  return new PreTrainedTokenizer(json, tokenizerConfig(1024));
}

/** The sentences on which transformers.js's ids or decoded text differ from frost's. */
export function tokenizerMismatches(model: SubwordModel, sentences: readonly string[]): TokenizerMismatch[] {
  const tokenizer = hfTokenizer(model);
  const out: TokenizerMismatch[] = [];
  for (const sentence of sentences) {
    const ids = model.encode(sentence);
    const hfIds = tokenizer.encode(sentence, { add_special_tokens: true });
    const text = model.decode(ids);
    // transformers.js refuses to decode no ids at all; that is the empty text.
    const hfText = hfIds.length === 0 ? '' : tokenizer.decode(hfIds, { skip_special_tokens: true });
    if (hfText !== text || hfIds.length !== ids.length || hfIds.some((id, i) => id !== ids[i]))
      out.push({ sentence, frost: { ids, text }, hf: { ids: hfIds, text: hfText } });
  }
  return out;
}
