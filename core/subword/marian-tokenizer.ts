/**
 * Marian's tokenisation (Hugging Face's MarianTokenizer, the opus-mt models): one SentencePiece model per side
 * (`source.spm`, `target.spm`) cuts text into pieces, and one vocabulary (`vocab.json`, the model's ids) names them;
 * a piece the vocabulary lacks is `<unk>`, and the source ends with `</s>`. The `.model` files are Marian's own
 * (SentencePiece's ids, no byte fallback, usually the `nmt_nfkc` normaliser), so this is not frost's subword model
 * (subword-model.ts insists on frost's specials and normaliser): it reads the pieces and their scores and segments
 * with frost's unigram segmenter (unigram-segmenter.ts, checked against spm_encode), an unknown character becoming
 * one piece of its own text (consecutive ones merged), as SentencePiece reports them.
 *
 * Normalisation: the normaliser's rule name is honoured by its definition (NFKC for `nfkc` and `nmt_nfkc`, which
 * also turns control characters and other spaces into spaces; `_cf` lower-cases), not by replaying the file's
 * precompiled character map; for ordinary text the two agree, and test/import-marian.test.ts checks frost's pieces
 * against spm_encode's on Multi30k. Other rule names are refused.
 *
 * Isomorphic: no Node APIs; files come through the caller's `read`.
 */
import { z } from 'zod';
import type { Tokenizer } from '../text/tokenize.ts';
import { segmenters, SPACE_MARK, type Segmenter } from './segmenter.ts';
import { ModelType, PieceType, type ModelProtoObject } from './sentencepiece-proto.ts';
import { readModelProto, SubwordModelError } from './subword-model.ts';
import './unigram-segmenter.ts';

/** The tokeniser name a card or run config gives for Marian's tokenisation. */
export const MARIAN_TOKENIZER = 'marian';

/** The card's and run config's `marian` block: a SentencePiece file per language, and which language is the source. */
export const marianSpecSchema = z.object({
  /** SentencePiece `.model` file by language (Marian's `source.spm` and `target.spm`), beside the card or run. */
  files: z.record(z.string(), z.string()),
  /** The source language: its token sequences end with `</s>` (MarianTokenizer.build_inputs_with_special_tokens). */
  source: z.string(),
});
export type MarianSpec = z.infer<typeof marianSpecSchema>;

/** The end-of-sentence token the source side ends with. */
export const MARIAN_EOS = '</s>';
/** What SentencePiece prints for `<unk>` when decoding. */
const UNK_SURFACE = ' \u2047 ';
/** Marian's target-language codes (`>>fra<<`) at the start of a multilingual model's source. */
const LANGUAGE_CODE = /^>>.+<</;

const NORMALISERS = ['identity', 'nfkc', 'nmt_nfkc', 'nfkc_cf', 'nmt_nfkc_cf'] as const;
export type MarianNormaliser = (typeof NORMALISERS)[number];
/**
 * What the `nmt_*` normalisers do before NFKC, as regular-expression character classes (the Hugging Face export
 * writes the same classes into tokenizer.json): C0/C1 controls other than tab and newlines go; tab, newlines and
 * other spaces become a space.
 */
export const NMT_REMOVED = '[\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]';
export const NMT_SPACES = '[\\t\\n\\r\\u00A0\\u1680\\u2000-\\u200B\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF]';
/** What `remove_extra_whitespaces` trims at either end: JavaScript's White_Space and line terminators. */
export const TRIMMED =
  '[\\t\\n\\u000B\\u000C\\r \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF]';
const NMT_REMOVED_RE = new RegExp(NMT_REMOVED, 'gu');
const NMT_SPACES_RE = new RegExp(NMT_SPACES, 'gu');
const TRIMMED_RE = new RegExp(`^${TRIMMED}+|${TRIMMED}+$`, 'gu');

/** One of Marian's SentencePiece models: text to pieces, pieces to text. */
export class MarianSentencePiece {
  readonly #segmenter: Segmenter;
  readonly #pieces: readonly string[];
  /** The normaliser's rule, by name. */
  readonly normaliser: MarianNormaliser;
  /** SentencePiece's whitespace settings. */
  readonly spec: ModelProtoObject['normalizer_spec'];
  /** The pieces the segmenter matches, with their scores (normal and user-defined ones). */
  readonly scores: ReadonlyMap<string, number>;
  readonly #decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

  private constructor(proto: ModelProtoObject, label: string) {
    const { trainer_spec: trainer, normalizer_spec: normalizer } = proto;
    if (trainer.model_type !== ModelType.UNIGRAM) {
      throw new SubwordModelError(label, `model type ${trainer.model_type} is not unigram (1), the type Marian uses`);
    }
    const name = (normalizer.name || 'nmt_nfkc') as MarianNormaliser;
    if (!NORMALISERS.includes(name)) {
      throw new SubwordModelError(
        label,
        `normaliser '${normalizer.name}' is not one frost reads (${NORMALISERS.join(', ')})`,
      );
    }
    this.normaliser = name;
    this.spec = normalizer;
    const normalIds = new Map<string, number>();
    const scores = new Map<string, number>();
    let wordSafe = true;
    proto.pieces.forEach(({ piece, type, score }, id) => {
      if (type === PieceType.NORMAL || type === PieceType.USER_DEFINED) {
        normalIds.set(piece, id);
        scores.set(piece, score);
        if (piece.indexOf(SPACE_MARK, 1) >= 0) wordSafe = false;
      }
    });
    // No byte fallback: an unknown character's bytes come out as ids past the pieces (V + byte), turned back into
    // the character's text below.
    this.scores = scores;
    const V = proto.pieces.length;
    const byteIds = Int32Array.from({ length: 256 }, (_, b) => V + b);
    this.#pieces = proto.pieces.map((p) => p.piece);
    try {
      this.#segmenter = segmenters.get('unigram').create({ pieces: proto.pieces, normalIds, byteIds, wordSafe });
    } catch (err) {
      throw new SubwordModelError(label, (err as Error).message, { cause: err });
    }
  }

  /** Reads a `.model` file; refuses, naming `label`, bytes that are not one or a model frost cannot segment. */
  static fromBytes(bytes: Uint8Array, label: string): MarianSentencePiece {
    return new MarianSentencePiece(readModelProto(bytes, label), label);
  }

  /** The normaliser's rule, then SentencePiece's whitespace handling (extra spaces removed, one `▁` in front). */
  normalize(text: string): string {
    let s = text;
    if (this.normaliser !== 'identity') {
      if (this.normaliser.startsWith('nmt_')) s = s.replace(NMT_REMOVED_RE, '').replace(NMT_SPACES_RE, ' ');
      s = s.normalize('NFKC');
      if (this.normaliser.endsWith('_cf')) s = s.toLowerCase();
    }
    if (this.spec.remove_extra_whitespaces) s = s.replace(/ +/g, ' ').replace(TRIMMED_RE, '');
    return s;
  }

  /** Text to pieces, as `spm_encode --output_format=piece` prints them. */
  encodeAsPieces(text: string): string[] {
    const normalized = this.normalize(text);
    if (normalized === '') return [];
    const escaped = this.spec.escape_whitespaces ? normalized.replaceAll(' ', SPACE_MARK) : normalized;
    const marked = this.spec.add_dummy_prefix && !escaped.startsWith(SPACE_MARK) ? SPACE_MARK + escaped : escaped;
    const ids: number[] = [];
    this.#segmenter.encode(marked, ids);
    const V = this.#pieces.length;
    const out: string[] = [];
    let bytes: number[] = [];
    let lastUnknown = false;
    const flush = () => {
      if (bytes.length === 0) return;
      const surface = this.#decoder.decode(Uint8Array.from(bytes));
      // SentencePiece merges a run of unknown characters into one piece.
      if (lastUnknown) out[out.length - 1] += surface;
      else out.push(surface);
      lastUnknown = true;
      bytes = [];
    };
    for (const id of ids) {
      if (id >= V) {
        bytes.push(id - V);
        continue;
      }
      flush();
      out.push(this.#pieces[id]!);
      lastUnknown = false;
    }
    flush();
    return out;
  }
}

/** Marian's tokenisation as a frost {@link Tokenizer}: pieces, with `</s>` after a source sentence. */
export class MarianTokenizer implements Tokenizer {
  readonly name = MARIAN_TOKENIZER;

  constructor(
    readonly models: ReadonlyMap<string, MarianSentencePiece>,
    readonly source: string,
  ) {}

  model(lang: string): MarianSentencePiece {
    const model = this.models.get(lang);
    if (model === undefined) {
      throw new RangeError(`no SentencePiece model for '${lang}' (models: ${[...this.models.keys()].join(', ')})`);
    }
    return model;
  }

  tokenize(text: string, lang: string): string[] {
    const code = LANGUAGE_CODE.exec(text);
    const rest = code ? text.slice(code[0].length) : text;
    const pieces = [...(code ? [code[0]] : []), ...this.model(lang).encodeAsPieces(rest)];
    if (lang === this.source) pieces.push(MARIAN_EOS);
    return pieces;
  }

  /** SentencePiece's DecodePieces: pieces joined, `▁` a space, the leading space dropped; `<unk>` is ` ⁇ `. */
  detokenize(tokens: readonly string[], _lang: string): string {
    const text = tokens.map((t) => (t === '<unk>' ? UNK_SURFACE : t === MARIAN_EOS ? '' : t)).join('');
    const spaced = text.replaceAll(SPACE_MARK, ' ');
    return spaced.startsWith(' ') ? spaced.slice(1) : spaced;
  }
}

/**
 * Reads the files a `marian` block names.
 * @param read returns a file's bytes (fs in Node, fetch in the browser)
 * @param locate how a file is named in errors (its path or URL)
 */
export async function loadMarianTokenizer(
  spec: MarianSpec,
  read: (file: string) => Promise<Uint8Array>,
  locate: (file: string) => string = (file) => file,
): Promise<MarianTokenizer> {
  const models = new Map<string, MarianSentencePiece>();
  for (const [lang, file] of Object.entries(spec.files)) {
    let bytes: Uint8Array;
    try {
      bytes = await read(file);
    } catch (err) {
      throw new SubwordModelError(locate(file), `cannot read the SentencePiece model (${(err as Error).message})`, {
        cause: err,
      });
    }
    models.set(lang, MarianSentencePiece.fromBytes(bytes, locate(file)));
  }
  if (!models.has(spec.source)) {
    throw new Error(`marian tokeniser: no SentencePiece model for the source language '${spec.source}'`);
  }
  return new MarianTokenizer(models, spec.source);
}
