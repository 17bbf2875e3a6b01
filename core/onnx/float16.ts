/* eslint-disable no-bitwise -- binary16 conversion is bit packing by definition. */
/**
 * IEEE 754 binary16 ("fp16", "half") conversions, for exporting float16 models.
 *
 * Conversion goes from the float32 value of the input (numbers are first
 * rounded to float32, as weights come from Float32Arrays), and rounds to
 * nearest, ties to even, as IEEE and numpy's `astype(float16)` do. Values past
 * the largest half (65504, plus half an ulp) become ±Infinity; NaN stays NaN.
 */

// One shared scratch word to get at float32 bits without allocating.
const scratch = new Float32Array(1);
const scratchBits = new Uint32Array(scratch.buffer);

/** Rounds `value` (taken as float32) to the nearest fp16 and returns its 16 bits. */
export function float32ToFloat16Bits(value: number): number {
  scratch[0] = value;
  const bits = scratchBits[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  let mantissa = bits & 0x7fffff;

  if (exponent === 0xff) {
    // Inf stays Inf; NaN keeps its top payload bits and is forced quiet so it can't turn into Inf.
    return mantissa === 0 ? sign | 0x7c00 : sign | 0x7e00 | (mantissa >>> 13);
  }

  const halfExponent = exponent - 127 + 15;
  if (halfExponent >= 31) return sign | 0x7c00; // too large: overflow to Inf

  if (halfExponent <= 0) {
    // Subnormal half (or zero). Values below 2^-25 round to zero, and 2^-25
    // itself is a tie with zero (even), so everything below -10 is zero.
    if (halfExponent < -10) return sign;
    mantissa |= 0x800000; // make the implicit leading 1 explicit
    const shift = 14 - halfExponent; // 13 mantissa bits dropped, plus the denormalising shift
    let half = mantissa >>> shift;
    const rest = mantissa & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    // may carry into the smallest normal: still correct
    if (rest > halfway || (rest === halfway && (half & 1) === 1)) half += 1;
    return sign | half;
  }

  let half = (halfExponent << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  // A carry out of the mantissa bumps the exponent, and from 0x7bff on to 0x7c00 (Inf): both correct.
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half += 1;
  return sign | half;
}

/** The value of fp16 `bits` (exactly representable as a float32/number). */
export function float16BitsToFloat32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24; // zero or subnormal
  if (exponent === 31) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** Converts float values to fp16 bits, element by element. */
export function toFloat16Array(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = float32ToFloat16Bits(values[i]!);
  return out;
}

/** Converts fp16 bits back to float32 values. */
export function fromFloat16Array(bits: ArrayLike<number>): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = float16BitsToFloat32(bits[i]!);
  return out;
}
