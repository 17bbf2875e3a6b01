/* eslint-disable no-bitwise -- this file is the seeded hash; bit operations are its substance. */
/**
 * frost's seeded generator. Every random number frost draws (initialisation, shuffling, frozen
 * output matrices) comes from here, never from Math.random, so a run is reproducible and a frozen
 * matrix can be regenerated anywhere from its seed.
 *
 * It is counter-based: value i of stream `key` is fmix32((i * GOLDEN) ^ key). Each step is a uint32
 * Mul, BitwiseXor or BitShift, which is exactly what an ONNX graph can express, so an exported model
 * can rebuild a frozen matrix from its seed instead of storing it (see the export of fixed heads).
 */

/** 2^32 / phi: spreads consecutive counters over the whole uint32 range before mixing. */
export const GOLDEN = 0x9e3779b1;
/** MurmurHash3's fmix32 multipliers. */
export const FMIX_M1 = 0x85ebca6b;
export const FMIX_M2 = 0xc2b2ae35;
const TWO_POW_M24 = 2 ** -24;

/** MurmurHash3's 32-bit finaliser: a bijection on uint32 with full avalanche. */
export function fmix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, FMIX_M1);
  h ^= h >>> 13;
  h = Math.imul(h, FMIX_M2);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The stream key for a seed and a stream name, so that different tensors drawn from one seed differ. */
export function streamKey(seed: number, stream = ''): number {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new RangeError(`'seed' must be an integer in [0, 2^32), got ${seed}`);
  }
  let h = fmix32(seed ^ 0x5bd1e995);
  for (let i = 0; i < stream.length; i++) h = fmix32(h ^ Math.imul(stream.charCodeAt(i), GOLDEN));
  return h;
}

/** uint32 hash of counter i in stream `key`. */
export function hashAt(key: number, i: number): number {
  return fmix32(Math.imul(i >>> 0, GOLDEN) ^ key);
}

/** float32 in [0, 1): the top 24 bits of the hash, exact in float32 (so the ONNX Cast path agrees bit for bit). */
export function unitAt(key: number, i: number): number {
  return (hashAt(key, i) >>> 8) * TWO_POW_M24;
}

/**
 * A [rows, cols] matrix of uniform draws in [lo, hi), row-major, element (r, c) from counter r*cols + c.
 * Each value is fround(fround(u * (hi - lo)) + lo): two float32 roundings, the same two an ONNX
 * Mul then Add in float32 make.
 */
export function uniformMatrix(key: number, rows: number, cols: number, lo: number, hi: number): Float32Array {
  if (rows * cols > 0xffffffff) throw new RangeError(`matrix of ${rows}x${cols} exceeds the 2^32 counter range`);
  const out = new Float32Array(rows * cols);
  const span = Math.fround(hi - lo);
  const low = Math.fround(lo);
  for (let i = 0; i < out.length; i++) out[i] = Math.fround(Math.fround(unitAt(key, i) * span) + low);
  return out;
}

/** Divides each row by its L2 norm, accumulating the sum of squares in float32 left to right. */
export function l2NormaliseRows(m: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(m.length);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let c = 0; c < cols; c++) {
      const v = m[r * cols + c];
      ss = Math.fround(ss + Math.fround(v * v));
    }
    const norm = Math.fround(Math.sqrt(ss));
    for (let c = 0; c < cols; c++) out[r * cols + c] = Math.fround(m[r * cols + c] / norm);
  }
  return out;
}

/**
 * A sequential generator over one counter stream: reproducible, cheap to checkpoint (its state is
 * two integers), and splittable by name.
 */
export class SeededRandom {
  private counter: number;
  readonly key: number;

  constructor(seed: number, stream = '', counter = 0) {
    this.key = streamKey(seed, stream);
    this.counter = counter;
  }

  /** A child generator whose draws are independent of this one's. */
  fork(stream: string): SeededRandom {
    const child = new SeededRandom(0, '', 0);
    (child as { key: number }).key = fmix32(this.key ^ streamKey(0, stream));
    return child;
  }

  /** Uniform uint32. */
  nextUint32(): number {
    return hashAt(this.key, this.counter++);
  }

  /** Uniform float in [0, 1) with 53 random bits. */
  next(): number {
    const hi = this.nextUint32() >>> 5;
    const lo = this.nextUint32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Fisher-Yates shuffle in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  get state(): number {
    return this.counter;
  }

  set state(counter: number) {
    this.counter = counter;
  }
}
