/** [B, L] row-major → [L, B] row-major: decoders unroll over time, so they read targets step by step. */
export function timeMajor<T extends Int32Array | Float32Array>(x: T, B: number, L: number): T {
  const out = new (x.constructor as new (n: number) => T)(x.length);
  for (let b = 0; b < B; b++) for (let t = 0; t < L; t++) out[t * B + b] = x[b * L + t];
  return out;
}
