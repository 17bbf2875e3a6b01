import { generate } from '../core/decode/generate.ts';
import type { SearchOptions } from '../core/decode/types.ts';
import { corpusBleu } from '../core/metrics/bleu.ts';
import { corpusChrf } from '../core/metrics/chrf.ts';
import type { Tokenizer } from '../core/text/tokenize.ts';
import { SPECIALS, type Vocabulary } from '../core/vocab.ts';
import type { Seq2SeqModel } from '../models/index.ts';
import { TfjsStepModel } from './tfjs-step-model.ts';

export interface EvalSet {
  src: Int32Array;
  ref: string;
}

/** Translates id sequences with the tfjs model, `batchSize` sentences at a time; returns target token lists. */
async function translateIds(
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
    const hyps = await generate(stepModel, initial, chunk.length, {
      ...opts,
      sourceLengths: chunk.map((s) => s.length),
    });
    for (const h of hyps) out.push(tgtVocab.decode(h[0].tokens, { stripSpecials: true }));
  }
  return out;
}

/** Validation BLEU of a translation run: sacreBLEU's default (cased, 13a) and, beside it, lower-cased. */
export interface BleuResult {
  /** Cased BLEU (sacreBLEU default): the headline. */
  bleu: number;
  /** BLEU with both sides lower-cased (sacreBLEU --lowercase): what word-level, lower-casing models compare on. */
  bleuLc: number;
  /** chrF2 and chrF2++, lower-cased. */
  chrf: number;
  chrfpp: number;
  hypotheses: string[];
}

/**
 * Corpus BLEU of detokenised output against the raw references, cased (sacreBLEU's default, the headline)
 * and lower-cased, and chrF and chrF++ of the same output, lower-cased (sacreBLEU's defaults otherwise). A
 * word-level Multi30k model writes lower-case text, so its cased BLEU is low by construction; subword models keep
 * case.
 */
export async function evaluateBleu(
  model: Seq2SeqModel,
  tgtVocab: Vocabulary,
  set: EvalSet[],
  tgtLang: string,
  tokenizer: Tokenizer,
  opts: SearchOptions = {},
): Promise<BleuResult> {
  const tokens = await translateIds(
    model,
    tgtVocab,
    set.map((s) => s.src),
    opts,
  );
  const hypotheses = tokens.map((t) => tokenizer.detokenize(t, tgtLang));
  const refs = [set.map((s) => s.ref)];
  return {
    bleu: corpusBleu(hypotheses, refs).score,
    bleuLc: corpusBleu(hypotheses, refs, { lowercase: true }).score,
    chrf: corpusChrf(hypotheses, refs, { lowercase: true }).score,
    chrfpp: corpusChrf(hypotheses, refs, { lowercase: true, wordOrder: 2 }).score,
    hypotheses,
  };
}
