import { SeededRandom } from '../../core/random.ts';
import type { ImageBatch } from '../../models/index.ts';
import { DEFAULT_SPECIAL_IDS, type SpecialIds } from './batches.ts';

/**
 * Caption training batches. An image's captions always go into the same batch, so the image
 * encoder (a CNN: most of a step's cost) runs once per image, not once per caption; a batch is as
 * many whole images as fit in `maxCaptions` captions (at least one). Image order is shuffled per
 * epoch, deterministically from the seed.
 */

/** One image's captions as ids (no specials), and the row of its input in an {@link ImageSource}. */
export interface EncodedCaptionImage {
  row: number;
  captions: Int32Array[];
}

/** Model inputs by row: normalised pixels from the image cache, or a frozen encoder's features. */
export interface ImageSource {
  /** Shape of one input ([3, size, size] or a feature shape). */
  readonly shape: readonly number[];
  /** Rows' inputs, row-major [rows.length, ...shape]. */
  read(rows: ArrayLike<number>): Float32Array;
}

/** The images of each batch of `epoch`, as indices into `images`. */
export function planCaptionBatches(
  images: readonly EncodedCaptionImage[],
  opts: { seed: number; maxCaptions: number },
  epoch: number,
): Int32Array[] {
  if (!Number.isInteger(opts.maxCaptions) || opts.maxCaptions < 1)
    throw new RangeError(`maxCaptions must be a positive integer, got ${opts.maxCaptions}`);
  const order = Int32Array.from(images.keys());
  const rng = new SeededRandom(opts.seed, `caption-batches/${epoch}`);
  for (let i = order.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  const plan: Int32Array[] = [];
  let current: number[] = [];
  let captions = 0;
  for (const index of order) {
    const n = images[index].captions.length;
    if (current.length > 0 && captions + n > opts.maxCaptions) {
      plan.push(Int32Array.from(current));
      current = [];
      captions = 0;
    }
    current.push(index);
    captions += n;
  }
  if (current.length > 0) plan.push(Int32Array.from(current));
  return plan;
}

/** The padded batch of the images at `indices`: every caption of each, rows grouped by image. */
export function makeCaptionBatch(
  images: readonly EncodedCaptionImage[],
  indices: ArrayLike<number>,
  source: ImageSource,
  ids: SpecialIds = DEFAULT_SPECIAL_IDS,
): ImageBatch {
  const chosen = Array.from(indices, (i) => images[i]);
  const captions = chosen.flatMap((im) => im.captions);
  const imageRows = Int32Array.from(chosen.flatMap((im, i) => im.captions.map(() => i)));
  const B = captions.length;
  const T = Math.max(...captions.map((c) => c.length)) + 1;
  const tgtIn = new Int32Array(B * T).fill(ids.pad);
  const tgtOut = new Int32Array(B * T).fill(ids.pad);
  const tgtMask = new Float32Array(B * T);
  let tokens = 0;
  captions.forEach((c, b) => {
    const row = b * T;
    // tgtIn = <s> y, tgtOut = y </s>
    tgtIn[row] = ids.bos;
    tgtIn.set(c, row + 1);
    tgtOut.set(c, row);
    tgtOut[row + c.length] = ids.eos;
    tgtMask.fill(1, row, row + c.length + 1);
    tokens += c.length + 1;
  });
  return {
    B,
    T,
    tgtIn,
    tgtOut,
    tgtMask,
    tokens,
    images: source.read(chosen.map((im) => im.row)),
    imageShape: [...source.shape],
    imageCount: chosen.length,
    imageRows,
  };
}
