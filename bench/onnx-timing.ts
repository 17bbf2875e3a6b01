/**
 * Small timing helpers shared by the ONNX head benchmarks (bench/frozen-heads.ts,
 * bench/hadamard-head.ts): per-run time of onnxruntime-node sessions, measured in interleaved
 * rounds so that sessions compared with each other share the machine's noise.
 */
import type { ort } from '../core/runtime/ort-node.ts';
import { createNodeSession } from '../core/runtime/ort-node.ts';

/** A session and how long creating it took (constant folding happens here). */
export async function createTimed(
  bytes: Uint8Array,
  threads: number,
): Promise<{ session: ort.InferenceSession; createMs: number }> {
  const t0 = performance.now();
  const session = await createNodeSession(bytes, { intraOpNumThreads: threads });
  return { session, createMs: performance.now() - t0 };
}

/**
 * Median per-run milliseconds of each session on the same feeds: `rounds` rounds, each timing
 * `runs` runs of every session in turn, after `warmup` untimed runs each.
 */
export async function medianRunMs(
  sessions: ort.InferenceSession[],
  feeds: Record<string, ort.Tensor>,
  opts: { rounds: number; runs: number; warmup: number },
): Promise<number[]> {
  for (const s of sessions) for (let i = 0; i < opts.warmup; i++) await s.run(feeds);
  const samples = sessions.map(() => [] as number[]);
  for (let r = 0; r < opts.rounds; r++) {
    for (const [k, s] of sessions.entries()) {
      const t0 = performance.now();
      for (let i = 0; i < opts.runs; i++) await s.run(feeds);
      samples[k]!.push((performance.now() - t0) / opts.runs);
    }
  }
  return samples.map((xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!);
}
