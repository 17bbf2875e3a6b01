/**
 * The shape classes of the per-shape GEMM choice (gemm-probe.ts) and the measurement that picks a runner for each.
 * A class is the transposes (nn, nt, tn, tt) × a size bucket of M·K·N (multiply-adds, in steps of 8×: < 2¹⁸, < 2²¹,
 * < 2²⁴, < 2²⁷, < 2³⁰, larger). The probe times one representative product of each class through every runner
 * that loads (XNNPACK only in the three small buckets: above them it is 4-10× slower, and timing it would cost more
 * than the rest), interleaved, the best of a few calls each, and picks the fastest; ≈ 0.5-1 s in all on a 2-core VM.
 */
import type { GemmRunnerName, NativeGemm } from './native-gemm.ts';

/** Upper bounds (exclusive) of the size buckets, in multiply-adds; the last bucket has none. */
export const BUCKET_LIMITS = [2 ** 18, 2 ** 21, 2 ** 24, 2 ** 27, 2 ** 30];

/** One representative [M, K, N] per bucket: thin products as training makes them (the 4th: a GRU step's h·Wh). */
export const BUCKET_SHAPES: readonly (readonly [number, number, number])[] = [
  [32, 64, 64],
  [64, 128, 128],
  [64, 512, 256],
  [64, 512, 1536],
  [256, 512, 2048],
  [1024, 512, 2048],
];

/** XNNPACK (one wasm thread) is timed only in these buckets. */
const XNNPACK_BUCKETS = 3;

/** A plain loop, no closure: the dispatcher calls it on every product of a training step. */
export function sizeBucket(macs: number): number {
  let i = 0;
  while (i < BUCKET_LIMITS.length && macs >= BUCKET_LIMITS[i]) i++;
  return i;
}

/** The class of a product: 'nt:3' is A plain, B transposed, 2²⁴ ≤ M·K·N < 2²⁷. */
export function shapeClass(M: number, K: number, N: number, tA: boolean, tB: boolean): string {
  return `${tA ? 't' : 'n'}${tB ? 't' : 'n'}:${sizeBucket(M * K * N)}`;
}

export interface ProbeShape {
  class: string;
  M: number;
  K: number;
  N: number;
  tA: boolean;
  tB: boolean;
}

/** Every class with its representative product. */
export function probeShapes(): ProbeShape[] {
  const shapes: ProbeShape[] = [];
  for (const [M, K, N] of BUCKET_SHAPES)
    for (const tA of [false, true])
      for (const tB of [false, true]) shapes.push({ class: shapeClass(M, K, N, tA, tB), M, K, N, tA, tB });
  return shapes;
}

export interface ProbeCandidate {
  name: GemmRunnerName;
  /** null: XNNPACK. */
  runner: NativeGemm | null;
}

/** Milliseconds of one call of the product through a candidate (bench or probe: through tf.matMul). */
export type TimeProduct = (candidate: ProbeCandidate, shape: ProbeShape) => number;

export interface ClassChoice {
  class: string;
  /** The representative product timed. */
  shape: string;
  chosen: GemmRunnerName;
  /** Best time of a call per candidate timed, in ms. */
  ms: Partial<Record<GemmRunnerName, number>>;
}

/** Times every class through every candidate (interleaved, best of `reps` after a warm-up call) and picks. */
export function probeClasses(candidates: readonly ProbeCandidate[], time: TimeProduct, reps = 4): ClassChoice[] {
  const out: ClassChoice[] = [];
  for (const shape of probeShapes()) {
    const bucket = Number(shape.class.split(':')[1]);
    const timed = candidates.filter((c) => c.runner != null || bucket < XNNPACK_BUCKETS);
    if (timed.length === 0) continue;
    const best = timed.map(() => Infinity);
    const n = bucket >= 4 ? Math.min(reps, 2) : reps;
    for (let r = 0; r <= n; r++)
      for (const [i, c] of timed.entries()) {
        const ms = time(c, shape);
        if (r > 0) best[i] = Math.min(best[i], ms); // the first call packs, transposes or creates a session
      }
    let k = 0;
    for (let i = 1; i < timed.length; i++) if (best[i] < best[k]) k = i;
    out.push({
      class: shape.class,
      shape: `${shape.tA ? `[${shape.K}×${shape.M}]ᵀ` : `[${shape.M}×${shape.K}]`}·${shape.tB ? `[${shape.N}×${shape.K}]ᵀ` : `[${shape.K}×${shape.N}]`}`,
      chosen: timed[k].name,
      ms: Object.fromEntries(timed.map((c, i) => [c.name, Number(best[i].toFixed(4))])),
    });
  }
  return out;
}
