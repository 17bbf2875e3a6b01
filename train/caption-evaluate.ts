import { generate } from '../core/decode/generate.ts';
import { cocoBleu } from '../core/metrics/coco-bleu.ts';
import { DEFAULT_CAPTION_MAX_LENGTH } from '../core/runtime/caption.ts';
import { SPECIALS, type Vocabulary } from '../core/vocab.ts';
import type { Seq2SeqModel } from '../models/index.ts';
import type { ImageSource } from './data/caption-batches.ts';
import { TfjsStepModel } from './tfjs-step-model.ts';

/** Images to caption during training: rows of an {@link ImageSource} and their reference captions (tokenised). */
export interface CaptionEvalSet {
  rows: Int32Array;
  refs: string[][][];
}

/** Captions `rows` of `source` with the tfjs model, `batchSize` images at a time; returns word lists. */
async function captionRows(
  model: Seq2SeqModel,
  vocab: Vocabulary,
  source: ImageSource,
  rows: ArrayLike<number>,
  opts: { beam?: number; maxLen?: number; batchSize?: number } = {},
): Promise<string[][]> {
  const stepModel = new TfjsStepModel(model, vocab.size, SPECIALS.bos.id, SPECIALS.eos.id, SPECIALS.pad.id);
  const batchSize = opts.batchSize ?? 50;
  const out: string[][] = [];
  for (let i = 0; i < rows.length; i += batchSize) {
    const chunk = Array.from(rows).slice(i, i + batchSize);
    const initial = stepModel.encodeImages(source.read(chunk), chunk.length);
    const hyps = await generate(stepModel, initial, chunk.length, {
      beam: opts.beam ?? 1,
      maxLen: opts.maxLen ?? DEFAULT_CAPTION_MAX_LENGTH,
    });
    for (const h of hyps) out.push(vocab.decode(h[0].tokens, { stripSpecials: true }));
  }
  return out;
}

/** coco-caption BLEU-4 (×100, the scale the trainer logs) of greedy captions of the set. */
export async function captionBleu4(
  model: Seq2SeqModel,
  vocab: Vocabulary,
  source: ImageSource,
  set: CaptionEvalSet,
  /** Output tokens to the references' words (subword models: detokenise, then split); @default the tokens */
  toWords?: (tokens: string[]) => string[],
): Promise<number> {
  const rows = await captionRows(model, vocab, source, set.rows);
  const hyps = toWords ? rows.map(toWords) : rows;
  return cocoBleu(hyps, set.refs).bleu[3] * 100;
}
