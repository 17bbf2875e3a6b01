/**
 * Every image of a caption data set decoded, centre-cropped and resized once, kept on disk as raw
 * RGB bytes, so training epochs read pixels instead of decoding JPEGs.
 *
 * Files: `<cacheDir>/<size>.u8` (N×size×size×3 bytes, images in data set order, HWC) and
 * `<cacheDir>/<size>.json` (the index: ids and a key). The key hashes what the bytes depend on
 * (each file's path, size and mtime, the crop size, the alpha background and the cache format),
 * so a changed image list or file rebuilds the cache. Both files are written to temporaries and
 * renamed into place, so an interrupted build leaves the previous cache or none, never half of one.
 *
 * The bytes are exactly what core/image/preprocess.ts feeds a model at serving time
 * (`flattenAlpha(centreCropResize(…))`), so training and serving see the same pixels.
 *
 * Node only.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { decodeImage } from '../../core/image/decode-node.ts';
import {
  backgroundOf,
  centreCropResize,
  DEFAULT_IMAGE_SPEC,
  flattenAlpha,
  type ImageSpec,
  rgbToNormalisedCHW,
} from '../../core/image/preprocess.ts';
import type { CaptionDataset } from './captions.ts';

/** Bumped whenever the bytes a cache holds would change for the same inputs. */
const CACHE_FORMAT = 1;

/** Decoded images, one row of size×size×3 bytes each. */
export interface ImageCache {
  size: number;
  count: number;
  /** count×size×size×3 bytes: RGB, row-major (HWC), alpha already flattened. */
  pixels: Uint8Array;
  /** Image ids in row order. */
  ids: readonly string[];
  /** The row of an image id; -1 when the id is not cached. */
  indexOf(id: string): number;
}

/** Options of {@link loadImageCache}. */
export interface ImageCacheOptions {
  /** Where `<size>.u8` and `<size>.json` live (created when missing). */
  cacheDir: string;
  /**
   * The crop size, and the mean colour translucent pixels are flattened onto.
   * @default DEFAULT_IMAGE_SPEC
   */
  spec?: ImageSpec;
  /** Images decoded at once; sharp decodes on libuv's thread pool. @default 2 × cores */
  concurrency?: number;
  /** Called as images are decoded during a rebuild (not when the cache is current). */
  onProgress?: (done: number, total: number) => void;
}

interface CacheIndex {
  format: number;
  key: string;
  size: number;
  count: number;
  ids: string[];
}

/**
 * Returns the data set's image cache, building it first when it is missing or stale.
 * @throws ImageDecodeError naming the image file when one cannot be decoded
 */
export async function loadImageCache(dataset: CaptionDataset, opts: ImageCacheOptions): Promise<ImageCache> {
  const spec = opts.spec ?? DEFAULT_IMAGE_SPEC;
  const { size } = spec;
  const key = await cacheKey(dataset, spec);
  const dataPath = join(opts.cacheDir, `${size}.u8`);
  const indexPath = join(opts.cacheDir, `${size}.json`);

  const current = await readIndex(indexPath);
  if (current?.key === key) {
    const pixels = await readFile(dataPath).catch(() => null);
    if (pixels && pixels.length === current.count * size * size * 3)
      return makeCache(size, current.ids, new Uint8Array(pixels.buffer, pixels.byteOffset, pixels.length));
  }

  const pixels = await decodeAll(dataset, spec, opts);
  const ids = dataset.images.map((im) => im.id);
  await mkdir(opts.cacheDir, { recursive: true });
  const suffix = `.tmp-${process.pid}-${Date.now()}`;
  try {
    await writeFile(dataPath + suffix, pixels);
    const index: CacheIndex = { format: CACHE_FORMAT, key, size, count: ids.length, ids };
    await writeFile(indexPath + suffix, JSON.stringify(index));
    await rename(dataPath + suffix, dataPath);
    await rename(indexPath + suffix, indexPath);
  } finally {
    await rm(dataPath + suffix, { force: true });
    await rm(indexPath + suffix, { force: true });
  }
  return makeCache(size, ids, pixels);
}

/** The index when it parses and has this format; null otherwise (then the cache is rebuilt). */
async function readIndex(path: string): Promise<CacheIndex | null> {
  try {
    const index = JSON.parse(await readFile(path, 'utf8')) as CacheIndex;
    return index.format === CACHE_FORMAT && Array.isArray(index.ids) && index.ids.length === index.count ? index : null;
  } catch {
    return null;
  }
}

async function cacheKey(dataset: CaptionDataset, spec: ImageSpec): Promise<string> {
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ format: CACHE_FORMAT, size: spec.size, background: backgroundOf(spec) }));
  for (const im of dataset.images) {
    const s = await stat(im.path);
    hash.update(`\n${im.id}\t${im.path}\t${s.size}\t${s.mtimeMs}`);
  }
  return hash.digest('hex');
}

async function decodeAll(dataset: CaptionDataset, spec: ImageSpec, opts: ImageCacheOptions): Promise<Uint8Array> {
  const { size } = spec;
  const row = size * size * 3;
  const total = dataset.images.length;
  const pixels = new Uint8Array(total * row);
  const concurrency = Math.max(1, opts.concurrency ?? 2 * availableParallelism());
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      const i = next++;
      const { rgba, width, height } = await decodeImage(dataset.images[i]!.path);
      pixels.set(flattenAlpha(centreCropResize(rgba, width, height, size), spec), i * row);
      opts.onProgress?.(++done, total);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return pixels;
}

function makeCache(size: number, ids: readonly string[], pixels: Uint8Array): ImageCache {
  const rows = new Map(ids.map((id, i) => [id, i]));
  return { size, count: ids.length, pixels, ids, indexOf: (id) => rows.get(id) ?? -1 };
}

/**
 * Normalises cached rows into a model batch: a [rows.length, 3, size, size] float tensor's data.
 * @param out reused when given (must hold rows.length × 3 × size × size floats)
 * @throws RangeError when the spec's size is not the cache's, or a row is out of range
 */
export function normaliseBatch(
  cache: ImageCache,
  rows: ArrayLike<number>,
  spec: ImageSpec = DEFAULT_IMAGE_SPEC,
  out?: Float32Array,
): Float32Array {
  if (spec.size !== cache.size)
    throw new RangeError(`normaliseBatch: the cache holds ${cache.size}px images, the spec asks for ${spec.size}px`);
  const row = cache.size * cache.size * 3;
  const batch = out ?? new Float32Array(rows.length * row);
  if (batch.length < rows.length * row)
    throw new RangeError(`normaliseBatch: 'out' holds ${batch.length} floats, ${rows.length * row} needed`);
  for (let b = 0; b < rows.length; b++) {
    const r = rows[b]!;
    if (!Number.isInteger(r) || r < 0 || r >= cache.count)
      throw new RangeError(`normaliseBatch: row ${r} is outside 0..${cache.count - 1}`);
    rgbToNormalisedCHW(cache.pixels.subarray(r * row, (r + 1) * row), cache.size, spec, batch, b * row);
  }
  return batch;
}
