/**
 * The batches bench/train-speed.ts trains on, prepared once and written to one binary file that
 * both sides read: frost (bench/train-speed.ts --worker) and the PyTorch peer (bench/peer/rnn_attn.py)
 * train on exactly the same padded batches.
 *
 * Data: Multi30k task 1 (train/data/paths.ts multi30kDir()), the 'multi30k' tokenizer, word
 * vocabularies from the training split with min frequency 2, lengths ≤ 50 (what `frost train`
 * does, train/prepare-data.ts), batches of ≤ 64 sentences from planBatches (length-bucketed, seeded).
 * Without the corpus (`--data toy`) the seeded toy corpus stands in (train/data/toy-corpus.ts).
 *
 * File layout (little-endian int32 unless said): magic 'FTSB', version 1, srcVocab, tgtVocab,
 * count, then per batch B, S, T, tokens, src [B·S], srcLen [B], tgtIn [B·T], tgtOut [B·T],
 * tgtMask [B·T] (float32). Rows are batch-major, as train/data/batches.ts makes them.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { getTokenizer } from '../core/text/tokenize.ts';
import { Vocabulary } from '../core/vocab.ts';
import { filterByLength, makeBatch, planBatches, type Batch, type EncodedPair } from '../train/data/batches.ts';
import { loadParallelCorpus } from '../train/data/corpus.ts';
import { multi30kDir } from '../train/data/paths.ts';
import { makeToyCorpus } from '../train/data/toy-corpus.ts';

export interface BenchData {
  /** What the batches were cut from, in words. */
  source: string;
  /** Whether srcVocab and tgtVocab are one joint vocabulary. */
  joint: boolean;
  srcVocab: number;
  tgtVocab: number;
  batches: Batch[];
}

export interface BenchDataOptions {
  /** 'multi30k' (default) or 'toy'. */
  data: string;
  src: string;
  tgt: string;
  /** Most sentences per batch. */
  batchSize: number;
  /**
   * Token-based batches (the Transformer's recipe, fairseq's --max-tokens): most padded tokens per
   * batch, B·max(S, T); then batchSize only caps the sentences.
   */
  maxTokens?: number;
  /** One word vocabulary over both languages (a joint vocabulary: the Transformer shares its embeddings). */
  joint?: boolean;
  count: number;
  seed: number;
}

/**
 * `count` batches of one epoch's plan, skipping the plan's short tail batches (fewer than
 * batchSize rows), so every measured step has the full batch.
 */
export async function prepareBenchData(opts: BenchDataOptions): Promise<BenchData> {
  let pairs: EncodedPair[];
  let srcVocab: Vocabulary;
  let tgtVocab: Vocabulary;
  let source: string;
  if (opts.data === 'toy') {
    const corpus = makeToyCorpus({ seed: opts.seed, train: 4000, val: 10, test: 10 });
    const words = (s: string) => s.split(' ');
    const src = corpus.train.map((p) => words(p.src));
    const tgt = corpus.train.map((p) => words(p.tgt));
    srcVocab = Vocabulary.build(opts.joint ? [...src, ...tgt] : src);
    tgtVocab = opts.joint ? srcVocab : Vocabulary.build(tgt);
    pairs = corpus.train.map((p) => ({ src: srcVocab.encode(words(p.src)), tgt: tgtVocab.encode(words(p.tgt)) }));
    source = 'toy corpus (seeded)';
  } else {
    const dir = multi30kDir();
    const corpus = await loadParallelCorpus({ dataDir: dir, src: opts.src, tgt: opts.tgt, kind: 'multi30k' });
    const tok = getTokenizer('multi30k');
    const srcTok = corpus.train.map((p) => tok.tokenize(p.src, opts.src));
    const tgtTok = corpus.train.map((p) => tok.tokenize(p.tgt, opts.tgt));
    srcVocab = Vocabulary.build(opts.joint ? [...srcTok, ...tgtTok] : srcTok, { minFreq: 2 });
    tgtVocab = opts.joint ? srcVocab : Vocabulary.build(tgtTok, { minFreq: 2 });
    const encoded = srcTok.map((s, i) => ({ src: srcVocab.encode(s), tgt: tgtVocab.encode(tgtTok[i]) }));
    pairs = filterByLength(encoded, { maxSrcLen: 50, maxTgtLen: 50 }).kept;
    source = `Multi30k ${opts.src}→${opts.tgt} train (${pairs.length} pairs), ${opts.joint ? 'one joint vocabulary, ' : ''}min freq 2`;
  }
  const maxTokens = opts.maxTokens ?? Infinity;
  const padded = (ix: Int32Array) => {
    let n = 0;
    for (const i of ix) n = Math.max(n, pairs[i].src.length, pairs[i].tgt.length + 1);
    return ix.length * n;
  };
  // Full batches only: batchSize sentences, or (token batches) at least 3/4 of maxTokens, so the plan's short tails
  // do not make a measured step.
  const full = (ix: Int32Array) =>
    ix.length === opts.batchSize || (maxTokens < Infinity && padded(ix) >= 0.75 * maxTokens);
  const plan = planBatches(pairs, { seed: opts.seed, maxSentences: opts.batchSize, maxTokens }, 0).filter(full);
  if (plan.length < opts.count) throw new Error(`only ${plan.length} full batches; asked for ${opts.count}`);
  return {
    source,
    joint: opts.joint === true,
    srcVocab: srcVocab.size,
    tgtVocab: tgtVocab.size,
    batches: plan.slice(0, opts.count).map((ix) => makeBatch(pairs, ix)),
  };
}

const MAGIC = 0x42535446; // 'FTSB'

export function writeBenchData(path: string, data: BenchData): void {
  const ints: number[] = [MAGIC, 1, data.srcVocab, data.tgtVocab, data.batches.length];
  const parts: Uint8Array[] = [];
  const header = Int32Array.from(ints);
  parts.push(new Uint8Array(header.buffer));
  for (const b of data.batches) {
    parts.push(new Uint8Array(Int32Array.from([b.B, b.S, b.T, b.tokens]).buffer));
    for (const a of [b.src, b.srcLen, b.tgtIn, b.tgtOut]) parts.push(new Uint8Array(Int32Array.from(a).buffer));
    parts.push(new Uint8Array(Float32Array.from(b.tgtMask).buffer));
  }
  writeFileSync(path, Buffer.concat(parts));
}

/** The file does not say whether the vocabulary is joint (the writer's caller passes it on): `joint` does. */
export function readBenchData(path: string, joint = false, source = path): BenchData {
  const buf = readFileSync(path);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let off = 0;
  const int = () => {
    const v = view.getInt32(off, true);
    off += 4;
    return v;
  };
  const ints = (n: number) => {
    const a = new Int32Array(n);
    for (let i = 0; i < n; i++) a[i] = int();
    return a;
  };
  if (int() !== MAGIC || int() !== 1) throw new Error(`${path}: not a frost train-speed batch file`);
  const srcVocab = int();
  const tgtVocab = int();
  const count = int();
  const batches: Batch[] = [];
  for (let i = 0; i < count; i++) {
    const [B, S, T, tokens] = ints(4);
    const src = ints(B * S);
    const srcLen = ints(B);
    const tgtIn = ints(B * T);
    const tgtOut = ints(B * T);
    const tgtMask = new Float32Array(B * T);
    for (let j = 0; j < B * T; j++, off += 4) tgtMask[j] = view.getFloat32(off, true);
    batches.push({ src, srcLen, tgtIn, tgtOut, tgtMask, B, S, T, tokens, indices: new Int32Array(0) });
  }
  return { source, joint, srcVocab, tgtVocab, batches };
}
