import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { gzipSync } from 'node:zlib';
import { z } from 'zod';
import type { ModelCard } from '../core/runtime/model-card.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { convertPrecision } from '../export/precision.ts';
import { medianSessionCreateMs } from '../export/size-report.ts';
import { cachedJson } from './cache.ts';
import type { CheckpointInfo } from '../train/run-folder.ts';
import type { TestSet } from './collect-test.ts';
import { latencySchema, onnxSizeSchema, REPORT_PRECISIONS, type OnnxSize } from './schema.ts';

/**
 * File sizes and speed of an exported model: ONNX bytes (raw and gzipped) and session-creation time
 * per storage precision, and decode latency at batch 1 and 64.
 *
 * fp16 and int8 are not exported separately: `frost export --precision` is one pass over the checked
 * float32 bytes (export/precision.ts), so applying that pass here gives byte for byte the files it
 * would write, without repeating the export's parity and BLEU checks.
 */

/** Sentences timed one by one; the median of 10 hides one slow run on a busy machine. */
const BATCH1_SENTENCES = 10;
const LARGE_BATCH = 64;
const LARGE_BATCHES = 3;
/** One thread: latency of the model itself, comparable between runs measured side by side or not. */
const LATENCY_THREADS = 1;

// A cached timing without its time is from older frost: timed again, so every row says when it was timed.
const speedSchema = z.object({
  onnx: z.object({ fp32: onnxSizeSchema, fp16: onnxSizeSchema, int8: onnxSizeSchema }),
  latency: latencySchema.extend({ timedAt: z.string() }),
});
export type Speed = z.infer<typeof speedSchema>;

async function graphBytes(modelDir: string, card: ModelCard): Promise<Uint8Array[]> {
  return Promise.all([card.graphs.encoder.file, card.graphs.decoder.file].map((f) => readFile(join(modelDir, f))));
}

async function onnxSize(graphs: Uint8Array[]): Promise<OnnxSize> {
  let bytes = 0;
  let gzipBytes = 0;
  let sessionCreateMs = 0;
  for (const g of graphs) {
    bytes += g.length;
    gzipBytes += gzipSync(g).length;
    sessionCreateMs += await medianSessionCreateMs(g);
  }
  return { bytes, gzipBytes, sessionCreateMs: Math.round(sessionCreateMs * 100) / 100 };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

async function measureLatency(modelDir: string, set: TestSet, beam: number): Promise<Speed['latency']> {
  if (set.sources.length === 0) throw new Error('cannot time decoding: the test set is empty');
  const runtime = await loadModelDir(modelDir, { intraOpNumThreads: LATENCY_THREADS });
  const time = async (texts: string[]) => {
    const start = performance.now();
    await runtime.translate(texts, { beam });
    return performance.now() - start;
  };
  const loadAverage = Math.round(loadavg()[0]! * 100) / 100;
  const timedAt = new Date().toISOString();
  try {
    // The first run pays for allocations and lazy initialisation, not for decoding.
    await time(set.sources.slice(0, 1));
    const singles = set.sources.slice(0, BATCH1_SENTENCES);
    const one: number[] = [];
    for (const s of singles) one.push(await time([s]));
    const size = Math.min(LARGE_BATCH, set.sources.length);
    const batches = Math.max(1, Math.min(LARGE_BATCHES, Math.floor(set.sources.length / size)));
    const many: number[] = [];
    for (let b = 0; b < batches; b++) many.push(await time(set.sources.slice(b * size, (b + 1) * size)));
    const round = (ms: number) => Math.round(ms * 100) / 100;
    return {
      beam,
      threads: LATENCY_THREADS,
      batch1Ms: round(median(one)),
      batch1Sentences: singles.length,
      batch64Ms: round(median(many)),
      batch64Size: size,
      batch64Batches: batches,
      loadAverage,
      timedAt,
    };
  } finally {
    await runtime.release();
  }
}

/** Sizes and speed of the run's export, cached in `<run>/eval/` by checkpoint hash, beam and test set. */
export async function measureSpeed(
  runDir: string,
  modelDir: string,
  card: ModelCard,
  checkpoint: CheckpointInfo,
  set: TestSet,
  beam: number,
): Promise<Speed> {
  const path = join(runDir, 'eval', `speed-beam${beam}-${checkpoint.sha256.slice(0, 12)}.json`);
  const key = { checkpoint: checkpoint.sha256, beam, testSet: set.fingerprint };
  return cachedJson(path, key, speedSchema, async () => {
    const fp32 = await graphBytes(modelDir, card);
    const onnx = {} as Speed['onnx'];
    for (const p of REPORT_PRECISIONS) onnx[p] = await onnxSize(fp32.map((g) => convertPrecision(g, p).bytes));
    return { onnx, latency: await measureLatency(modelDir, set, beam) };
  });
}
