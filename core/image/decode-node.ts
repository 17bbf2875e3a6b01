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
import { checkImageBytes, checkPixelCount, DEFAULT_MAX_BYTES, type ImageLimits, isCompleteImage, type SupportedImageFormat } from './sniff.ts';

export { ImageDecodeError, type ImageDecodeReason } from './decode-error.ts';
export { DEFAULT_MAX_BYTES, DEFAULT_MAX_PIXELS, type ImageLimits } from './sniff.ts';

/** A decoded image. */
export interface DecodedImage {
  /** `width`×`height`×4 bytes, row-major, straight alpha. */
  rgba: Uint8Array;
  width: number;
  height: number;
  format: SupportedImageFormat;
}

/**
 * Decodes a JPEG or PNG, given as bytes or as a file path (the format comes from the bytes, never
 * from the name). The header is read first, so an image over `maxPixels` is refused without
 * decoding it; a file over `maxBytes` is refused without reading it.
 * @throws ImageDecodeError naming the file when given a path; file-system errors (ENOENT, …) as they are
 */
export async function decodeImage(input: Buffer | Uint8Array | string, opts: ImageLimits = {}): Promise<DecodedImage> {
  const source = typeof input === 'string' ? input : undefined;
  let bytes: Uint8Array;
  if (typeof input === 'string') {
    const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    const { size } = await stat(input);
    if (size > maxBytes) throw new ImageDecodeError('too-large', `the image is ${size} bytes, more than the limit of ${maxBytes}`, source);
    bytes = await readFile(input);
  } else {
    bytes = input;
  }
  const format = checkImageBytes(bytes, opts, source);

  // failOn 'error' refuses truncated data and hard decode errors but, like browsers, accepts a
  // JPEG with recoverable glitches (libjpeg's "corrupt data" warnings) instead of refusing it.
  const image = sharp(bytes, { failOn: 'error', limitInputPixels: false, ignoreIcc: true, autoOrient: true, sequentialRead: true });
  let width: number;
  let height: number;
  try {
    const meta = await image.metadata();
    ({ width, height } = meta);
  } catch (err) {
    throw failure(err, bytes, format, source);
  }
  checkPixelCount(width, height, opts, source);

  try {
    const { data, info } = await image.toColourspace('srgb').ensureAlpha().raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    if (info.channels !== 4) throw new Error(`expected 4 channels after ensureAlpha, got ${info.channels}`);
    return { rgba: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height, format };
  } catch (err) {
    throw failure(err, bytes, format, source);
  }
}

/** Maps a libvips failure to a reason: truncation is told apart from other damage. */
function failure(err: unknown, bytes: Uint8Array, format: SupportedImageFormat, source: string | undefined): ImageDecodeError {
  const message = err instanceof Error ? err.message : String(err);
  // libpng reports every failure as "read error", so truncation is read from the missing end marker.
  const truncated = /premature end|truncated|unexpected end/i.test(message) || !isCompleteImage(bytes, format);
  const what = format === 'jpeg' ? 'JPEG' : 'PNG';
  return truncated
    ? new ImageDecodeError('truncated', `the ${what} is truncated: its data ends early (${message})`, source, { cause: err })
    : new ImageDecodeError('corrupt', `the ${what} could not be decoded (${message})`, source, { cause: err });
}
