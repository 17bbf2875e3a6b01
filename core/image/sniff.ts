/**
 * What a byte string is, from its first bytes, and how large an image it claims to be, from its
 * header. Both decoders check these before decoding: a file's name says nothing (a PDF renamed
 * `.jpg` is still a PDF), and a header that claims 40 megapixels is refused without allocating them.
 *
 * Isomorphic: no Node APIs.
 */
import { ImageDecodeError } from './decode-error.ts';

/** The formats frost decodes. */
export type SupportedImageFormat = 'jpeg' | 'png';

/** Formats recognised by signature; only {@link SupportedImageFormat} ones are decoded. */
export type SniffedFormat =
  SupportedImageFormat | 'gif' | 'webp' | 'bmp' | 'tiff' | 'heif' | 'avif' | 'jxl' | 'ico' | 'pdf' | 'unknown';

const startsWith = (bytes: Uint8Array, sig: readonly number[], at = 0): boolean =>
  bytes.length >= at + sig.length && sig.every((b, i) => bytes[at + i] === b);

const ascii = (s: string): number[] => Array.from(s, (c) => c.charCodeAt(0));

/** The format a byte string starts like. */
export function sniffImageFormat(bytes: Uint8Array): SniffedFormat {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (startsWith(bytes, ascii('GIF87a')) || startsWith(bytes, ascii('GIF89a'))) return 'gif';
  if (startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8)) return 'webp';
  if (startsWith(bytes, ascii('BM'))) return 'bmp';
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a])) return 'tiff';
  if (startsWith(bytes, ascii('ftyp'), 4)) {
    const brand = String.fromCharCode(...bytes.subarray(8, 12));
    if (brand === 'avif' || brand === 'avis') return 'avif';
    if (['heic', 'heix', 'hevc', 'hevx', 'mif1', 'msf1'].includes(brand)) return 'heif';
  }
  if (startsWith(bytes, [0xff, 0x0a]) || startsWith(bytes, [0x00, 0x00, 0x00, 0x0c, 0x4a, 0x58, 0x4c, 0x20]))
    return 'jxl';
  if (startsWith(bytes, [0x00, 0x00, 0x01, 0x00])) return 'ico';
  if (startsWith(bytes, ascii('%PDF-'))) return 'pdf';
  return 'unknown';
}

/** Limits applied before decoding. */
export interface ImageLimits {
  /** Largest accepted file, in bytes. @default {@link DEFAULT_MAX_BYTES} */
  maxBytes?: number;
  /** Largest accepted width × height. @default {@link DEFAULT_MAX_PIXELS} */
  maxPixels?: number;
  /** Longest accepted width or height. @default {@link DEFAULT_MAX_SIDE} */
  maxSide?: number;
}

/** 20 MiB: a full-quality photo from any current camera fits. */
export const DEFAULT_MAX_BYTES = 20 * 1024 * 1024;

/**
 * 25 megapixels: a 24 MP camera frame fits. Its RGBA is 100 MB, and anything larger costs memory
 * without helping a 128-pixel model input.
 */
export const DEFAULT_MAX_PIXELS = 25_000_000;

/**
 * 12,000 pixels a side: a 24 MP camera frame (6000×4000) or a 3:1 panorama of the pixel limit
 * fits. A PNG of 1×24,000,000 passes the pixel limit and is 94 kB, yet costs libpng seconds of
 * per-row work; the model only ever sees a centre square of the image.
 */
export const DEFAULT_MAX_SIDE = 12_000;

/**
 * Checks bytes before any decoder sees them: not empty, not too many, and JPEG or PNG by
 * signature.
 * @param source the file name, for messages
 * @throws ImageDecodeError ('empty', 'too-large', 'not-an-image' or 'unsupported-format')
 */
export function checkImageBytes(bytes: Uint8Array, limits: ImageLimits = {}, source?: string): SupportedImageFormat {
  const maxBytes = limits.maxBytes ?? DEFAULT_MAX_BYTES;
  if (bytes.length === 0) throw new ImageDecodeError('empty', 'the image is empty (0 bytes)', source);
  if (bytes.length > maxBytes) {
    throw new ImageDecodeError(
      'too-large',
      `the image is ${bytes.length} bytes, more than the limit of ${maxBytes}`,
      source,
    );
  }
  const format = sniffImageFormat(bytes);
  if (format === 'jpeg' || format === 'png') return format;
  if (format === 'unknown')
    throw new ImageDecodeError('not-an-image', 'not an image: the bytes are neither JPEG nor PNG', source);
  if (format === 'pdf')
    throw new ImageDecodeError(
      'not-an-image',
      'not an image: the bytes are a PDF document (only JPEG and PNG are accepted)',
      source,
    );
  throw new ImageDecodeError(
    'unsupported-format',
    `${format.toUpperCase()} images are not supported; send JPEG or PNG`,
    source,
  );
}

/**
 * Width and height from a JPEG's SOF segment or a PNG's IHDR, or null when the header does not
 * say (a damaged file: the decoder will then report it).
 */
export function readImageSize(
  bytes: Uint8Array,
  format: SupportedImageFormat,
): { width: number; height: number } | null {
  const u16 = (at: number): number => bytes[at]! * 256 + bytes[at + 1]!;
  if (format === 'png') {
    // signature (8), chunk length (4), 'IHDR' (4), then width and height as big-endian uint32
    if (bytes.length < 24 || !startsWith(bytes, ascii('IHDR'), 12)) return null;
    return { width: u16(16) * 65536 + u16(18), height: u16(20) * 65536 + u16(22) };
  }
  let at = 2;
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) return null;
    const marker = bytes[at + 1]!;
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2; // markers without a length
      continue;
    }
    const length = u16(at + 2);
    // SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      if (at + 9 > bytes.length) return null;
      return { width: u16(at + 7), height: u16(at + 5) };
    }
    if (marker === 0xda || length < 2) return null; // image data before any frame header
    at += 2 + length;
  }
  return null;
}

/** The last 12 bytes of every complete PNG: an empty IEND chunk and its CRC. */
const PNG_IEND = [0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];

/**
 * Whether the file reaches its end marker: IEND for a PNG, EOI for a JPEG. Browsers draw a
 * truncated file's missing part grey instead of failing, so the browser decoder asks this to
 * refuse such files as sharp does; the Node decoder asks it to tell truncation from other damage.
 *
 * A JPEG is walked segment by segment (so an EXIF thumbnail's EOI, inside APP1, does not count)
 * and through each scan's entropy-coded data, where 0xFF is only ever followed by 0x00 (stuffing)
 * or a restart marker. Bytes after EOI (a phone's appended video, say) are allowed.
 */
export function isCompleteImage(bytes: Uint8Array, format: SupportedImageFormat): boolean {
  if (format === 'png') return PNG_IEND.every((b, i) => bytes[bytes.length - PNG_IEND.length + i] === b);
  let at = 2;
  while (at + 1 < bytes.length) {
    if (bytes[at] !== 0xff) return false;
    const marker = bytes[at + 1]!;
    if (marker === 0xd9) return true;
    if (marker === 0xff) {
      at++;
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
      continue;
    }
    if (at + 3 >= bytes.length) return false;
    at += 2 + bytes[at + 2]! * 256 + bytes[at + 3]!;
    if (marker !== 0xda) continue;
    // Entropy-coded data runs to the next marker that is neither stuffing nor a restart.
    while (
      at + 1 < bytes.length &&
      !(bytes[at] === 0xff && bytes[at + 1] !== 0x00 && !(bytes[at + 1]! >= 0xd0 && bytes[at + 1]! <= 0xd7))
    )
      at++;
  }
  return false;
}

/**
 * Refuses an image whose header claims more than `maxPixels`, or a side longer than `maxSide`,
 * before decoding it.
 * @throws ImageDecodeError ('too-large')
 */
export function checkPixelCount(width: number, height: number, limits: ImageLimits = {}, source?: string): void {
  const maxPixels = limits.maxPixels ?? DEFAULT_MAX_PIXELS;
  const maxSide = limits.maxSide ?? DEFAULT_MAX_SIDE;
  if (Math.max(width, height) > maxSide) {
    throw new ImageDecodeError(
      'too-large',
      `the image is ${width}×${height}, a side longer than the limit of ${maxSide} pixels`,
      source,
    );
  }
  if (width * height > maxPixels) {
    const mp = ((width * height) / 1e6).toFixed(1);
    throw new ImageDecodeError(
      'too-large',
      `the image is ${width}×${height} (${mp} megapixels), more than the limit of ${maxPixels} pixels`,
      source,
    );
  }
}
