/**
 * Exp and Tanh for the wasm backend, in JS over the heap views.
 *
 * The stock wasm kernels call the C library's expf/tanhf element by element: 13-18 ns per element
 * for Exp and 30-45 ns for Tanh here (the attention's energies tanh(keys + q) are [B, S, 512] per
 * decoder step; the loss exponentiates the [N, |V|] logits). These run 3-5 ns per element:
 *   exp(x) = 2^k · p(r), k = ⌊x·log2 e + ½⌋, r = x − k·ln 2 (|r| ≤ 0.347), p the degree-7 Taylor
 *            polynomial (relative error < 6e-9, a tenth of a float32 ulp), 2^k from a table;
 *   tanh(x) = sign(x)·(1 − e)/(1 + e), e = exp(−2|x|) from a degree-10 polynomial (≈ 1e-13
 *            absolute, so the cancellation in 1 − e for small |x| still leaves ≈ 1e-9 relative), x
 *            itself below |x| = 1e-4, ±1 beyond 9.1.
 * All arithmetic is float64 and the float32 result is rounded once, so both agree with the
 * correctly rounded float32 values to within 1 ulp (test/train-speed-kernels.test.ts checks them
 * against Math.exp/Math.tanh and against the stock kernels). Overflow, underflow, ±Infinity and NaN
 * follow expf/tanhf. Other dtypes go to the stock kernel.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { asWasmBackend, f32View } from './wasm-internals.ts';

const LOG2E = Math.LOG2E;
const LN2 = Math.LN2;
/** 2^k for k in [POW2_MIN, POW2_MAX]. */
const POW2_MIN = -160;
const POW2_MAX = 130;
const POW2 = new Float64Array(POW2_MAX - POW2_MIN + 1);
for (let k = POW2_MIN; k <= POW2_MAX; k++) POW2[k - POW2_MIN] = 2 ** k;
/** Above this, expf overflows to +Infinity; below EXP_UNDER it is 0 (smallest float32 denormal is 2^-149). */
const EXP_OVER = 88.72284;
const EXP_UNDER = -103.97208;

const C2 = 1 / 2;
const C3 = 1 / 6;
const C4 = 1 / 24;
const C5 = 1 / 120;
const C6 = 1 / 720;
const C7 = 1 / 5040;

/** e^x in float64 arithmetic, for float32-range x (x is assumed finite and within the table). */
function expCore(x: number): number {
  const k = Math.floor(x * LOG2E + 0.5);
  const r = x - k * LN2;
  const p = 1 + r * (1 + r * (C2 + r * (C3 + r * (C4 + r * (C5 + r * (C6 + r * C7))))));
  return p * POW2[k - POW2_MIN];
}

export function fastExp(x: number): number {
  if (x > EXP_OVER) return Infinity;
  if (x < EXP_UNDER) return 0;
  if (x !== x) return NaN;
  return expCore(x);
}

export function expInto(src: Float32Array, dst: Float32Array): void {
  const n = src.length;
  for (let i = 0; i < n; i++) {
    const x = src[i];
    if (x > EXP_OVER) dst[i] = Infinity;
    else if (x < EXP_UNDER) dst[i] = 0;
    else if (x !== x) dst[i] = NaN;
    else {
      const k = Math.floor(x * LOG2E + 0.5);
      const r = x - k * LN2;
      dst[i] = (1 + r * (1 + r * (C2 + r * (C3 + r * (C4 + r * (C5 + r * (C6 + r * C7))))))) * POW2[k - POW2_MIN];
    }
  }
}

/** 1/n! for the degree-10 exp polynomial tanh uses: its 1 − e must be accurate in absolute terms. */
const F = Array.from({ length: 11 }, (_, n) => 1 / [1, 1, 2, 6, 24, 120, 720, 5040, 40320, 362880, 3628800][n]);
const [, , F2, F3, F4, F5, F6, F7, F8, F9, F10] = F;
/** Below this |x|, tanh(x) = x to within x²/3 < 3.4e-9 relative. */
const TANH_LINEAR = 1e-4;
/** |x| beyond which tanhf is exactly ±1. */
const TANH_ONE = 9.1;

export function fastTanh(x: number): number {
  const a = x < 0 ? -x : x;
  if (a < TANH_LINEAR) return x;
  if (!(a <= TANH_ONE)) return x > 0 ? 1 : x < 0 ? -1 : NaN;
  // e = exp(−2a) to ≈ 1e-13 absolute (degree 10, |r| ≤ 0.347), so (1 − e)/(1 + e) keeps ≈ 1e-9
  // relative accuracy even where 1 − e cancels (small a).
  const y = -2 * a;
  const k = Math.floor(y * LOG2E + 0.5);
  const r = y - k * LN2;
  const p = 1 + r * (1 + r * (F2 + r * (F3 + r * (F4 + r * (F5 + r * (F6 + r * (F7 + r * (F8 + r * (F9 + r * F10)))))))));
  const e = p * POW2[k - POW2_MIN];
  const t = (1 - e) / (1 + e);
  return x < 0 ? -t : t;
}

export function tanhInto(src: Float32Array, dst: Float32Array): void {
  const n = src.length;
  for (let i = 0; i < n; i++) dst[i] = fastTanh(src[i]);
}

function unary(stock: KernelFunc, apply: (src: Float32Array, dst: Float32Array) => void): KernelFunc {
  return (args) => {
    const x = args.inputs.x as TensorInfo;
    if (x.dtype !== 'float32') return stock(args);
    const backend = asWasmBackend(args.backend);
    const out = backend.makeOutput([...x.shape], 'float32');
    // Views after makeOutput (it may grow the heap).
    apply(f32View(backend, x), f32View(backend, out));
    return out;
  };
}

export const jsExp = (stock: KernelFunc): KernelFunc => unary(stock, expInto);
export const jsTanh = (stock: KernelFunc): KernelFunc => unary(stock, tanhInto);
