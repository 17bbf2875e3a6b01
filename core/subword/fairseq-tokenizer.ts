/**
 * fairseq's tokenisation of an imported fairseq model (train/import/fairseq.ts): the text goes through the BPE the
 * model was trained with, then fairseq's tokenize_line (runs of whitespace are one space, the ends stripped, split at
 * spaces) cuts it into the symbols of its dict.LANG.txt; the source ends with `</s>`. The BPE is one of fairseq's
 * `--bpe` choices:
 *
 * - `none`: whitespace words, as python/frost_torch/train_ddp.py trains;
 * - `subword_nmt`: subword-nmt's apply_bpe with a codes file (`#version: 0.2` or 0.1), word-internal pieces ending in
 *   `@@`, undone by fairseq's post-processing `(x + ' ').replace('@@ ', '').rstrip()`;
 * - `sentencepiece`: a SentencePiece unigram `.model` (pieces as spm_encode prints them, read with Marian's reader,
 *   marian-tokenizer.ts), undone by joining the pieces and turning `▁` into spaces.
 *
 * Isomorphic: no Node APIs; files come through the caller's `read`.
 */
import { z } from 'zod';
import type { Tokenizer } from '../text/tokenize.ts';
import { MarianSentencePiece } from './marian-tokenizer.ts';
import { SPACE_MARK } from './segmenter.ts';
import { SubwordModelError } from './subword-model.ts';

/** The tokeniser name a card or run config gives for an imported fairseq model's tokenisation. */
export const FAIRSEQ_TOKENIZER = 'fairseq';
export const FAIRSEQ_BPE = ['none', 'subword_nmt', 'sentencepiece'] as const;
export type FairseqBpe = (typeof FAIRSEQ_BPE)[number];

/** fairseq's end-of-sentence symbol, after every source sentence (Dictionary.encode_line's append_eos). */
export const FAIRSEQ_EOS = '</s>';
/**
 * frost's name for fairseq's own `<s>` (fairseq id 0): frost keeps `<s>` for the row its decoder starts from, which
 * for a fairseq model is `</s>`'s, so fairseq's `<s>`, an ordinary output of fairseq's softmax, is kept under this
 * name. Detokenising drops it, as fairseq's Dictionary.string does.
 */
export const FAIRSEQ_BOS = '<s>@fairseq';
/** subword-nmt's continuation mark, and fairseq's `--post-process subword_nmt` symbol. */
const BPE_MARK = '@@';

/** The card's and run config's `fairseq` block. */
export const fairseqSpecSchema = z.object({
  bpe: z.enum(FAIRSEQ_BPE),
  /** subword_nmt: the codes file; sentencepiece: the `.model` file; beside the card or run. None for `none`. */
  file: z.string().optional(),
  /** The source language: its symbol sequences end with `</s>`. */
  source: z.string(),
});
export type FairseqSpec = z.infer<typeof fairseqSpecSchema>;

/** fairseq's tokenize_line: whitespace runs are one space, the ends stripped, then split. */
export function tokenizeLine(text: string): string[] {
  const line = text.replace(/\s+/gu, ' ').trim();
  return line === '' ? [] : line.split(' ');
}

/** subword-nmt's BPE (apply_bpe.py's BPE.segment_tokens and encode), without glossaries, vocabulary or dropout. */
export class SubwordNmtCodes {
  readonly #ranks = new Map<string, number>();
  readonly #version: '0.1' | '0.2';
  readonly #cache = new Map<string, string[]>();

  private constructor(ranks: Map<string, number>, version: '0.1' | '0.2') {
    this.#ranks = ranks;
    this.#version = version;
  }

  /** Reads a codes file (learn_bpe.py's output); refuses, naming `label`, lines that are not a pair. */
  static parse(text: string, label: string): SubwordNmtCodes {
    const lines = text.split('\n');
    let version: '0.1' | '0.2' = '0.1';
    let start = 0;
    const header = /^#version: *(\d+)\.(\d+)/.exec(lines[0] ?? '');
    if (header) {
      version = header[1] === '0' && header[2] === '1' ? '0.1' : '0.2';
      if (!(header[1] === '0' && (header[2] === '1' || header[2] === '2')))
        throw new SubwordModelError(label, `codes version ${header[1]}.${header[2]} is not 0.1 or 0.2`);
      start = 1;
    }
    const ranks = new Map<string, number>();
    for (let i = start; i < lines.length; i++) {
      const line = lines[i]!.replace(/^[\r\n ]+|[\r\n ]+$/g, '');
      if (line === '' && i === lines.length - 1) continue;
      const pair = line.split(' ');
      if (pair.length !== 2) throw new SubwordModelError(label, `line ${i + 1} is not a pair of symbols: '${line}'`);
      const key = `${pair[0]} ${pair[1]}`;
      // The first occurrence of a pair is its rank (apply_bpe's dict over the reversed enumeration).
      if (!ranks.has(key)) ranks.set(key, i - start);
    }
    return new SubwordNmtCodes(ranks, version);
  }

  /** One word's pieces, the end-of-word mark removed. */
  encodeWord(orig: string): string[] {
    const cached = this.#cache.get(orig);
    if (cached) return cached;
    const chars = Array.from(orig);
    let word = this.#version === '0.1' ? [...chars, '</w>'] : [...chars.slice(0, -1), `${chars[chars.length - 1]}</w>`];
    while (word.length > 1) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i < word.length - 1; i++) {
        const rank = this.#ranks.get(`${word[i]} ${word[i + 1]}`);
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          best = i;
        }
      }
      if (best < 0) break;
      const [first, second] = [word[best]!, word[best + 1]!];
      const merged: string[] = [];
      for (let i = 0; i < word.length;) {
        if (word[i] === first && i < word.length - 1 && word[i + 1] === second) {
          merged.push(first + second);
          i += 2;
        } else {
          merged.push(word[i]!);
          i += 1;
        }
      }
      word = merged;
    }
    const last = word[word.length - 1]!;
    if (last === '</w>') word = word.slice(0, -1);
    else if (last.endsWith('</w>')) word = [...word.slice(0, -1), last.replace('</w>', '')];
    if (this.#cache.size < 100_000) this.#cache.set(orig, word);
    return word;
  }

  /** A line's pieces: each word's, all but its last ending in `@@`. */
  segment(text: string): string[] {
    const out: string[] = [];
    for (const w of text.replace(/^[\r\n ]+|[\r\n ]+$/g, '').split(' ')) {
      if (w === '') continue;
      const pieces = this.encodeWord(w);
      pieces.forEach((p, i) => out.push(i < pieces.length - 1 ? p + BPE_MARK : p));
    }
    return out;
  }
}

/** An imported fairseq model's tokenisation as a frost {@link Tokenizer}. */
export class FairseqTokenizer implements Tokenizer {
  readonly name = FAIRSEQ_TOKENIZER;

  constructor(
    readonly spec: FairseqSpec,
    private readonly bpe: { encode(text: string): string } | undefined,
  ) {}

  tokenize(text: string, lang: string): string[] {
    const symbols = tokenizeLine(this.bpe ? this.bpe.encode(text) : text);
    if (lang === this.spec.source) symbols.push(FAIRSEQ_EOS);
    return symbols;
  }

  /** fairseq's Dictionary.string (`</s>` and `<s>` dropped), then its post-processing for the BPE. */
  detokenize(tokens: readonly string[], _lang: string): string {
    const line = tokens.filter((t) => t !== FAIRSEQ_EOS && t !== FAIRSEQ_BOS && t !== '<s>').join(' ');
    switch (this.spec.bpe) {
      case 'subword_nmt':
        return `${line} `.replaceAll(`${BPE_MARK} `, '').trimEnd();
      case 'sentencepiece':
        return line.replaceAll(' ', '').replaceAll(SPACE_MARK, ' ').trim();
      default:
        return line;
    }
  }
}

/**
 * Reads the file a `fairseq` block names (none for `bpe: none`).
 * @param read returns a file's bytes (fs in Node, fetch in the browser)
 * @param locate how a file is named in errors (its path or URL)
 */
export async function loadFairseqTokenizer(
  spec: FairseqSpec,
  read: ((file: string) => Promise<Uint8Array>) | undefined,
  locate: (file: string) => string = (file) => file,
): Promise<FairseqTokenizer> {
  if (spec.bpe === 'none') return new FairseqTokenizer(spec, undefined);
  if (spec.file === undefined) throw new Error(`fairseq tokeniser: bpe '${spec.bpe}' needs its file`);
  if (read === undefined) throw new Error(`fairseq tokeniser: ${spec.file} needs a file loader`);
  let bytes: Uint8Array;
  try {
    bytes = await read(spec.file);
  } catch (err) {
    throw new SubwordModelError(locate(spec.file), `cannot read it (${(err as Error).message})`, { cause: err });
  }
  return new FairseqTokenizer(spec, fairseqBpe(spec.bpe, bytes, locate(spec.file)));
}

/** The BPE of a `fairseq` block from its file's bytes; refuses, naming `label`, a file that is not one. */
export function fairseqBpe(bpe: Exclude<FairseqBpe, 'none'>, bytes: Uint8Array, label: string) {
  if (bpe === 'subword_nmt') {
    const codes = SubwordNmtCodes.parse(new TextDecoder('utf-8', { fatal: false }).decode(bytes), label);
    return { encode: (text: string) => codes.segment(text).join(' ') };
  }
  const spm = MarianSentencePiece.fromBytes(bytes, label);
  return { encode: (text: string) => spm.encodeAsPieces(text).join(' ') };
}
