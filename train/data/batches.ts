import { SeededRandom } from '../../core/random.ts';
import { SPECIALS } from '../../core/vocab.ts';

/**
 * Length-bucketed, padded training batches. Sentences of similar length go together so little of
 * each batch is padding; the order stays random (shuffled chunks, shuffled batch order) so training
 * does not see lengths in a fixed sequence. Everything here is deterministic for a seed and epoch.
 */

/** A sentence pair as token ids, without <s> or </s> (the batcher adds them). */
export interface EncodedPair {
  src: ArrayLike<number>;
  tgt: ArrayLike<number>;
}

/** Special ids the batcher writes; the defaults are `Vocabulary`'s. */
export interface SpecialIds {
  pad: number;
  bos: number;
  eos: number;
}

export const DEFAULT_SPECIAL_IDS: Readonly<SpecialIds> = Object.freeze({
  pad: SPECIALS.pad.id,
  bos: SPECIALS.bos.id,
  eos: SPECIALS.eos.id,
});

/**
 * One padded batch, row-major. Row r is sentence `indices[r]` of the list given to the batcher.
 * S is the longest source in the batch, T the longest target plus one (for the <s> / </s> shift).
 */
export interface Batch {
  /** [B*S] source ids, padded with `pad`. */
  src: Int32Array;
  /** [B] source lengths. */
  srcLen: Int32Array;
  /** [B*T] decoder input: <s> y, then padding. */
  tgtIn: Int32Array;
  /** [B*T] decoder output: y </s>, then padding. */
  tgtOut: Int32Array;
  /** [B*T] 1 where tgtOut is a real token (</s> included), 0 on padding. */
  tgtMask: Float32Array;
  B: number;
  S: number;
  T: number;
  /** Real target tokens, </s> included: the sum of tgtMask, what the loss is averaged over. */
  tokens: number;
  /** [B] which sentences the rows are. */
  indices: Int32Array;
}

export interface LengthLimits {
  /** Longest source kept, in tokens without specials. */
  maxSrcLen: number;
  /** Longest target kept, in tokens without specials. */
  maxTgtLen: number;
}

/**
 * Drops pairs with an empty side or a side over its limit. Empty sides go because a zero-length
 * source leaves attention nothing to attend to, and an empty target teaches only "emit </s>".
 * @returns the kept pairs in their original order, and how many were dropped
 */
export function filterByLength<P extends EncodedPair>(
  pairs: readonly P[],
  limits: LengthLimits,
): { kept: P[]; dropped: number } {
  const kept = pairs.filter(
    (p) => p.src.length > 0 && p.tgt.length > 0 && p.src.length <= limits.maxSrcLen && p.tgt.length <= limits.maxTgtLen,
  );
  return { kept, dropped: pairs.length - kept.length };
}

export interface BatchOptions {
  /** Seed of the shuffles; with the epoch number it fixes the batches. */
  seed: number;
  /** Most sentences per batch. At least one of maxSentences and maxTokens must be given. */
  maxSentences?: number;
  /**
   * Most padded tokens per batch, counted as B * max(S, T). A single sentence longer than this
   * still gets a batch of its own rather than being lost.
   */
  maxTokens?: number;
  /**
   * Sentences per chunk that is sorted by length before it is cut into batches: larger chunks pad
   * less, smaller ones mix lengths more. @default 4096
   */
  chunkSize?: number;
  /** false cuts the shuffled sentences into batches as they come (plain random batching). @default true */
  bucket?: boolean;
}

/**
 * Which sentences form each batch of an epoch, in the order the batches are to be used.
 * Every sentence appears in exactly one batch.
 */
export function planBatches(pairs: readonly EncodedPair[], options: BatchOptions, epoch: number): Int32Array[] {
  const { maxSentences = Infinity, maxTokens = Infinity, chunkSize = 4096, bucket = true } = options;
  if (maxSentences === Infinity && maxTokens === Infinity) throw new Error('batches: give maxSentences or maxTokens');
  if (!(maxSentences >= 1) || !(maxTokens >= 1))
    throw new RangeError('batches: maxSentences and maxTokens must be >= 1');
  if (!Number.isInteger(epoch) || epoch < 0)
    throw new RangeError(`batches: epoch must be a non-negative integer, got ${epoch}`);
  const rng = new SeededRandom(options.seed, `batches/epoch-${epoch}`);
  const order = rng.shuffle(Array.from(pairs.keys()));

  const batches: Int32Array[] = [];
  const step = bucket ? Math.max(1, chunkSize) : order.length;
  for (let start = 0; start < order.length; start += step) {
    const chunk = order.slice(start, start + step);
    // Array.prototype.sort is stable, so ties keep their shuffled order.
    if (bucket)
      chunk.sort((a, b) => pairs[a].src.length - pairs[b].src.length || pairs[a].tgt.length - pairs[b].tgt.length);
    let current: number[] = [];
    let s = 0;
    let t = 0;
    for (const i of chunk) {
      const ns = Math.max(s, pairs[i].src.length);
      const nt = Math.max(t, pairs[i].tgt.length + 1);
      const n = current.length + 1;
      if (current.length > 0 && (n > maxSentences || n * Math.max(ns, nt) > maxTokens)) {
        batches.push(Int32Array.from(current));
        current = [i];
        s = pairs[i].src.length;
        t = pairs[i].tgt.length + 1;
      } else {
        current.push(i);
        s = ns;
        t = nt;
      }
    }
    if (current.length > 0) batches.push(Int32Array.from(current));
  }
  // Sorted chunks would otherwise hand the model short batches first and long ones last.
  return rng.shuffle(batches);
}

/** Pads the sentences `indices` of `pairs` into one batch. */
export function makeBatch(
  pairs: readonly EncodedPair[],
  indices: ArrayLike<number>,
  ids: SpecialIds = DEFAULT_SPECIAL_IDS,
): Batch {
  const B = indices.length;
  let S = 0;
  let T = 0;
  for (let r = 0; r < B; r++) {
    const p = pairs[indices[r]];
    S = Math.max(S, p.src.length);
    T = Math.max(T, p.tgt.length + 1);
  }
  const src = new Int32Array(B * S).fill(ids.pad);
  const srcLen = new Int32Array(B);
  const tgtIn = new Int32Array(B * T).fill(ids.pad);
  const tgtOut = new Int32Array(B * T).fill(ids.pad);
  const tgtMask = new Float32Array(B * T);
  let tokens = 0;
  for (let r = 0; r < B; r++) {
    const { src: x, tgt: y } = pairs[indices[r]];
    for (let j = 0; j < x.length; j++) src[r * S + j] = x[j];
    srcLen[r] = x.length;
    const row = r * T;
    tgtIn[row] = ids.bos;
    for (let j = 0; j < y.length; j++) {
      tgtIn[row + j + 1] = y[j];
      tgtOut[row + j] = y[j];
    }
    tgtOut[row + y.length] = ids.eos;
    tgtMask.fill(1, row, row + y.length + 1);
    tokens += y.length + 1;
  }
  return { src, srcLen, tgtIn, tgtOut, tgtMask, B, S, T, tokens, indices: Int32Array.from(indices) };
}
export interface PaddingStats {
  batches: number;
  sentences: number;
  /** Real source + target positions (target counted as T-shifted, i.e. with </s>). */
  realTokens: number;
  /** All positions of the padded tensors: sum of B*S + B*T. */
  paddedTokens: number;
  /**
   * Fraction of the padded tensors' positions that are padding: 1 - real / padded. The encoders
   * compute their share; the decoders skip the target side's (models/packed-steps.ts).
   */
  waste: number;
}

/** How much of the batches is padding, for logs and for tuning chunkSize / maxTokens. */
export function paddingStats(pairs: readonly EncodedPair[], plan: readonly ArrayLike<number>[]): PaddingStats {
  let real = 0;
  let padded = 0;
  let sentences = 0;
  for (const indices of plan) {
    let s = 0;
    let t = 0;
    for (let r = 0; r < indices.length; r++) {
      const p = pairs[indices[r]];
      real += p.src.length + p.tgt.length + 1;
      s = Math.max(s, p.src.length);
      t = Math.max(t, p.tgt.length + 1);
    }
    padded += indices.length * (s + t);
    sentences += indices.length;
  }
  return {
    batches: plan.length,
    sentences,
    realTokens: real,
    paddedTokens: padded,
    waste: padded === 0 ? 0 : 1 - real / padded,
  };
}
