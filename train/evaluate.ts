import { generate } from '../core/decode/generate.ts';
import type { SearchOptions } from '../core/decode/types.ts';
import { corpusBleu } from '../core/metrics/bleu.ts';
import { corpusChrf } from '../core/metrics/chrf.ts';
import { getTokenizer } from '../core/text/tokenize.ts';
import { SPECIALS, type Vocabulary } from '../core/vocab.ts';
import type { Seq2SeqModel } from '../models/index.ts';
import { TfjsStepModel } from './tfjs-step-model.ts';

export interface EvalSet {
  src: Int32Array;
  ref: string;
}

/** Translates id sequences with the tfjs model, `batchSize` sentences at a time; returns target token lists. */
export async function translateIds(
  model: Seq2SeqModel,
  tgtVocab: Vocabulary,
  sources: Int32Array[],
  opts: SearchOptions & { batchSize?: number } = {},
): Promise<string[][]> {
  const stepModel = new TfjsStepModel(model, tgtVocab.size, SPECIALS.bos.id, SPECIALS.eos.id, SPECIALS.pad.id);
  const batchSize = opts.batchSize ?? 64;
  const out: string[][] = [];
  for (let i = 0; i < sources.length; i += batchSize) {
    const chunk = sources.slice(i, i + batchSize);
    const initial = stepModel.encode(chunk);
    const hyps = await generate(stepModel, initial, chunk.length, { ...opts, sourceLengths: chunk.map((s) => s.length) });
    for (const h of hyps) out.push(tgtVocab.decode(h[0].tokens, { stripSpecials: true }));
  }
  return out;
}

/**
 * Corpus BLEU of detokenised output against the raw references, lower-cased on both sides since
 * the models produce lower-cased text (sacreBLEU's 13a tokenisation with --lowercase), and chrF and
 * chrF++ of the same output, lower-cased alike (sacreBLEU's defaults otherwise).
 */
export async function evaluateBleu(
  model: Seq2SeqModel,
  tgtVocab: Vocabulary,
  set: EvalSet[],
  tgtLang: string,
  tokenizer: string,
  opts: SearchOptions = {},
): Promise<{ bleu: number; chrf: number; chrfpp: number; hypotheses: string[] }> {
  const tok = getTokenizer(tokenizer);
  const tokens = await translateIds(model, tgtVocab, set.map((s) => s.src), opts);
  const hypotheses = tokens.map((t) => tok.detokenize(t, tgtLang));
  const refs = [set.map((s) => s.ref)];
  const result = corpusBleu(hypotheses, refs, { lowercase: true });
  const chrf = corpusChrf(hypotheses, refs, { lowercase: true }).score;
  const chrfpp = corpusChrf(hypotheses, refs, { lowercase: true, wordOrder: 2 }).score;
  return { bleu: result.score, chrf, chrfpp, hypotheses };
}
