/**
 * A pretrained image encoder given as ONNX (`frost train --encoder some.onnx`), run frozen by
 * onnxruntime-node: its interface is read once, and its output for every image of a data set is
 * computed once and cached on disk, so training reads features instead of running it every step.
 * Export merges the same graph in front of the model's encoder (export/merge-encoder.ts).
 *
 * Cache files: `<cacheDir>/features-<key>.f32` (float32 rows, images in the image cache's order)
 * and `.json` (count, shape, key); the key hashes the encoder's bytes, the chosen output, the
 * image ids and the preprocessing, so any change recomputes. Rows are read from the file per batch
 * (features of a large encoder can exceed memory: a 4×4×2048 grid is 128 kB an image).
 *
 * Node only.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ImageSpec } from '../../core/image/preprocess.ts';
import type { ImageSource } from './caption-batches.ts';
import { normaliseBatch, type ImageCache } from './image-cache.ts';
import { createNodeSession, ort } from '../../core/runtime/ort-node.ts';

/** What a frozen encoder reads and which of its outputs are the features. */
export interface FrozenEncoderInfo {
  /** Graph input: float32 [N, 3, size, size] normalised pixels. */
  input: string;
  /** Graph output used as features. */
  output: string;
  /** Input side, fixed by the graph or chosen by the caller. */
  size: number;
  /** Features per image: [C] (pooled) or [C, h, w] (a spatial grid). */
  featureShape: number[];
}

/**
 * Reads the encoder's input and outputs and runs it on one blank image to learn the feature shape.
 * @param opts.output the output to use (default: the graph's first output)
 * @param opts.size the input side when the graph leaves it dynamic (refused when it contradicts a fixed one)
 * @throws Error saying what does not fit: not one float32 [N, 3, H, W] input, an unknown output,
 *   features that are neither [N, C] nor [N, C, h, w]
 */
export async function describeFrozenEncoder(
  bytes: Uint8Array,
  where: string,
  opts: { output?: string; size?: number } = {},
): Promise<FrozenEncoderInfo> {
  let session: ort.InferenceSession;
  try {
    session = await createNodeSession(bytes);
  } catch (err) {
    throw new Error(`${where}: not a loadable ONNX model (${(err as Error).message.split('\n')[0]})`, { cause: err });
  }
  try {
    if (session.inputNames.length !== 1) {
      throw new Error(
        `${where}: a frozen image encoder must have one input (pixels [N, 3, H, W]); it has ${session.inputNames.length}: ${session.inputNames.join(', ')}`,
      );
    }
    const meta = session.inputMetadata[0];
    const dims = meta.isTensor ? meta.shape : [];
    if (
      !meta.isTensor ||
      meta.type !== 'float32' ||
      dims.length !== 4 ||
      (typeof dims[1] === 'number' && dims[1] !== 3)
    ) {
      throw new Error(
        `${where}: input '${meta.name}' must be float32 [N, 3, H, W], got ${meta.isTensor ? `${meta.type} [${dims.join(', ')}]` : 'a non-tensor'}`,
      );
    }
    const fixed = [dims[2], dims[3]].filter((d): d is number => typeof d === 'number');
    if (fixed.length === 2 && fixed[0] !== fixed[1])
      throw new Error(`${where}: input '${meta.name}' is ${fixed[0]}×${fixed[1]}; frost feeds square images`);
    const size = fixed[0] ?? opts.size;
    if (size === undefined) throw new Error(`${where}: input '${meta.name}' has a dynamic size; give the image size`);
    if (opts.size !== undefined && opts.size !== size)
      throw new Error(`${where}: input '${meta.name}' is fixed at ${size}×${size}, not ${opts.size}×${opts.size}`);
    const output = opts.output ?? session.outputNames[0];
    if (!session.outputNames.includes(output))
      throw new Error(`${where}: no output '${output}' (outputs: ${session.outputNames.join(', ')})`);
    const probe = await session.run(
      { [meta.name]: new ort.Tensor('float32', new Float32Array(3 * size * size), [1, 3, size, size]) },
      [output],
    );
    const featureShape = [...(probe[output] as ort.Tensor).dims.slice(1)].map(Number);
    if (!(featureShape.length === 1 || featureShape.length === 3)) {
      throw new Error(
        `${where}: output '${output}' is [N, ${featureShape.join(', ')}]; features must be [N, C] or [N, C, h, w]`,
      );
    }
    return { input: meta.name, output, size, featureShape };
  } finally {
    await session.release();
  }
}

/** SHA-256 of the encoder's bytes, recorded in the run config so a swapped file is noticed. */
export function encoderDigest(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

interface FeatureIndex {
  key: string;
  count: number;
  shape: number[];
}

/** Images per encoder run while filling the cache. */
const FEATURE_BATCH = 16;

/**
 * The frozen encoder's features for every row of `cache`, computed and written to `cacheDir` when
 * missing or stale, as an {@link ImageSource}.
 */
export async function loadFeatureSource(
  bytes: Uint8Array,
  info: FrozenEncoderInfo,
  cache: ImageCache,
  spec: ImageSpec,
  cacheDir: string,
  onProgress?: (done: number, total: number) => void,
): Promise<ImageSource> {
  const key = createHash('sha256')
    .update(JSON.stringify({ encoder: encoderDigest(bytes), output: info.output, spec, ids: cache.ids }))
    .digest('hex')
    .slice(0, 24);
  const dataPath = join(cacheDir, `features-${key}.f32`);
  const indexPath = join(cacheDir, `features-${key}.json`);
  const per = info.featureShape.reduce((a, b) => a * b, 1);
  const index = await readFile(indexPath, 'utf8')
    .then((t) => JSON.parse(t) as FeatureIndex)
    .catch(() => null);
  if (!(index?.key === key && index.count === cache.count && index.shape.join() === info.featureShape.join())) {
    await mkdir(cacheDir, { recursive: true });
    await computeFeatures(bytes, info, cache, spec, `${dataPath}.tmp-${process.pid}`, onProgress);
    await rename(`${dataPath}.tmp-${process.pid}`, dataPath);
    await rm(indexPath, { force: true });
    const written: FeatureIndex = { key, count: cache.count, shape: info.featureShape };
    await writeFile(indexPath, JSON.stringify(written));
  }
  const rowBytes = per * 4;
  return {
    shape: info.featureShape,
    read(rows) {
      const out = new Float32Array(rows.length * per);
      const bytesOut = new Uint8Array(out.buffer);
      const fd = openSync(dataPath, 'r');
      try {
        for (let i = 0; i < rows.length; i++) {
          const got = readSync(fd, bytesOut, i * rowBytes, rowBytes, rows[i] * rowBytes);
          if (got !== rowBytes)
            throw new Error(
              `${dataPath}: row ${rows[i]} is truncated (${got} of ${rowBytes} bytes); delete the file to recompute it`,
            );
        }
      } finally {
        closeSync(fd);
      }
      return out;
    },
  };
}

async function computeFeatures(
  bytes: Uint8Array,
  info: FrozenEncoderInfo,
  cache: ImageCache,
  spec: ImageSpec,
  path: string,
  onProgress?: (done: number, total: number) => void,
): Promise<void> {
  const session = await createNodeSession(bytes);
  const file = await open(path, 'w');
  try {
    for (let start = 0; start < cache.count; start += FEATURE_BATCH) {
      const rows = Array.from({ length: Math.min(FEATURE_BATCH, cache.count - start) }, (_, i) => start + i);
      const pixels = normaliseBatch(cache, rows, spec);
      const out = await session.run(
        { [info.input]: new ort.Tensor('float32', pixels, [rows.length, 3, spec.size, spec.size]) },
        [info.output],
      );
      const data = (out[info.output] as ort.Tensor).data as Float32Array;
      await file.write(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      onProgress?.(start + rows.length, cache.count);
    }
  } finally {
    await file.close();
    await session.release();
  }
}
