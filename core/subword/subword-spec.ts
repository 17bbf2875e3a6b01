/**
 * The `subword` block of a model card and of a run config: which SentencePiece model file serves which
 * language, and the text normalisation applied before encoding (normalize.ts), recorded as data.
 */
import { z } from 'zod';
import { NORMALIZATION } from './normalize.ts';

/** SentencePiece model types frost learns and reads; each has a segmenter (segmenter.ts) and a trainer. */
export const SUBWORD_KINDS = ['bpe', 'unigram'] as const;
export type SubwordKind = (typeof SUBWORD_KINDS)[number];

/** True for a vocabulary kind that is a subword model (not `word`). */
export function isSubwordKind(kind: string): kind is SubwordKind {
  return (SUBWORD_KINDS as readonly string[]).includes(kind);
}

const normalizationSchema = z.object({
  unicode: z.literal('NFC'),
  loneSurrogates: z.literal('replace'),
  controlsAndSpaces: z.literal('space'),
  collapseSpaces: z.literal(true),
  spaceMark: z.literal('space'),
  lowercase: z.literal(false),
});

export const subwordSpecSchema = z.object({
  /** The subword algorithm; the model files say the same (SentencePiece `model_type`). */
  kind: z.enum(SUBWORD_KINDS),
  /** One model and one vocabulary for source and target (and, in the model, one embedding matrix). */
  joint: z.boolean(),
  /** Pieces per model, specials and the 256 byte pieces included. */
  vocabSize: z.number().int().positive(),
  /** SentencePiece `.model` file by language, relative to the card or run folder. */
  files: z.record(z.string(), z.string()),
  normalization: normalizationSchema.default({ ...NORMALIZATION }),
});

export type SubwordSpec = z.infer<typeof subwordSpecSchema>;

/** The file name frost gives a subword model: `subword.model` when joint, else `subword.<lang>.model`. */
export function subwordFileName(joint: boolean, lang: string): string {
  return joint ? 'subword.model' : `subword.${lang}.model`;
}
