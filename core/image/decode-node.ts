/**
 * JPEG/PNG bytes or files → straight RGBA, with sharp (libvips). Node only; the browser's
 * counterpart is clients/web/src/image-input.ts, and both feed core/image/preprocess.ts.
 *
 * What is decided here, to match the browser's `createImageBitmap(blob, { colorSpaceConversion:
 * 'none', premultiplyAlpha: 'none' })`:
 * - EXIF orientation is applied (the browser's default `imageOrientation: 'from-image'`);
 * - embedded ICC profiles are ignored (`ignoreIcc`), as `colorSpaceConversion: 'none'` ignores them;
 * - greyscale becomes RGB, a missing alpha channel becomes 255, 16-bit samples become 8-bit.
 */
import { readFile, stat } from 'node:fs/promises';
import sharp from 'sharp';
import { ImageDecodeError } from './decode-error.ts';
import {
  checkImageBytes,
  checkPixelCount,
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_PIXELS,
  type ImageLimits,
  isCompleteImage,
  type SupportedImageFormat,
} from './sniff.ts';

export { ImageDecodeError, type ImageDecodeReason } from './decode-error.ts';
export { type ImageLimits } from './sniff.ts';

/** A decoded image. */
export interface DecodedImage {
  /** `width`×`height`×4 bytes, row-major, straight alpha. */
  rgba: Uint8Array;
  width: number;
  height: number;
  format: SupportedImageFormat;
  /** The image's own size (after EXIF orientation), when it was decoded at reduced size. */
  original?: { width: number; height: number };
}

/** Options of {@link decodeImage}: the limits checked before decoding, and decoding at reduced size. */
export interface DecodeOptions extends ImageLimits {
  /**
   * Decode an image of more than this many pixels at reduced size (libvips shrinks a JPEG while
   * decoding it and streams a PNG through the resize), so it never exists as full-size RGBA. A
   * server sets it to bound the memory of each upload; the CLI and the browser decode at full size,
   * which is what makes their tensors bit-identical. @default Infinity (never)
   */
  reduceAbovePixels?: number;
  /** The short side of an image decoded at reduced size. @default {@link DEFAULT_REDUCED_SHORT_SIDE} */
  reducedShortSide?: number;
}

/** 512: four times the default 128-pixel model input, so frost's own area resize still does the final averaging. */
const DEFAULT_REDUCED_SHORT_SIDE = 512;

/**
 * Decodes a JPEG or PNG, given as bytes or as a file path (the format comes from the bytes, never
 * from the name). The header is read first, so an image over `maxPixels` is refused without
 * decoding it; a file over `maxBytes` is refused without reading it.
 * @throws ImageDecodeError naming the file when given a path; file-system errors (ENOENT, …) as they are
 */
export async function decodeImage(
  input: Buffer | Uint8Array | string,
  opts: DecodeOptions = {},
): Promise<DecodedImage> {
  const source = typeof input === 'string' ? input : undefined;
  let bytes: Uint8Array;
  if (typeof input === 'string') {
    const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    const { size } = await stat(input);
    if (size > maxBytes)
      throw new ImageDecodeError('too-large', `the image is ${size} bytes, more than the limit of ${maxBytes}`, source);
    bytes = await readFile(input);
  } else {
    bytes = input;
  }
  const format = checkImageBytes(bytes, opts, source);

  // failOn 'error' refuses truncated data and hard decode errors but, like browsers, accepts a
  // JPEG with recoverable glitches (libjpeg's "corrupt data" warnings) instead of refusing it.
  const options = { failOn: 'error', ignoreIcc: true, autoOrient: true, sequentialRead: true } as const;
  let width: number;
  let height: number;
  let oriented: { width: number; height: number };
  try {
    // The header is read without libvips' own pixel limit, so that checkPixelCount words the refusal.
    const meta = await sharp(bytes, { ...options, limitInputPixels: false }).metadata();
    ({ width, height } = meta);
    oriented = meta.autoOrient ?? { width, height };
  } catch (err) {
    throw failure(err, bytes, format, source);
  }
  checkPixelCount(width, height, opts, source);
  // limitInputPixels repeats that check inside libvips, in case the header and the data disagree.
  const image = sharp(bytes, { ...options, limitInputPixels: opts.maxPixels ?? DEFAULT_MAX_PIXELS });

  const reduce = width * height > (opts.reduceAbovePixels ?? Infinity);
  if (reduce) {
    const side = opts.reducedShortSide ?? DEFAULT_REDUCED_SHORT_SIDE;
    // 'outside': the short side becomes `side` and the aspect ratio stays, so the centre square is
    // the same part of the picture.
    image.resize({ width: side, height: side, fit: 'outside', withoutEnlargement: true, kernel: 'linear' });
  }
  try {
    const { data, info } = await image
      .toColourspace('srgb')
      .ensureAlpha()
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 4) throw new Error(`expected 4 channels after ensureAlpha, got ${info.channels}`);
    const rgba = new Uint8Array(data.buffer, data.byteOffset, data.length);
    return { rgba, width: info.width, height: info.height, format, ...(reduce ? { original: oriented } : {}) };
  } catch (err) {
    throw failure(err, bytes, format, source);
  }
}

/** Maps a libvips failure to a reason: truncation is told apart from other damage. */
function failure(
  err: unknown,
  bytes: Uint8Array,
  format: SupportedImageFormat,
  source: string | undefined,
): ImageDecodeError {
  const message = err instanceof Error ? err.message : String(err);
  // libpng reports every failure as "read error", so truncation is read from the missing end marker.
  const truncated = /premature end|truncated|unexpected end/i.test(message) || !isCompleteImage(bytes, format);
  const what = format === 'jpeg' ? 'JPEG' : 'PNG';
  return truncated
    ? new ImageDecodeError('truncated', `the ${what} is truncated: its data ends early (${message})`, source, {
        cause: err,
      })
    : new ImageDecodeError('corrupt', `the ${what} could not be decoded (${message})`, source, { cause: err });
}
