/**
 * A picked or dropped image file → straight RGBA, in the browser. The counterpart of
 * core/image/decode-node.ts: the same checks before decoding, the same pixels after, so
 * core/image/preprocess.ts gives the page the tensor the server would compute.
 */
import { ImageDecodeError } from '../../../core/image/decode-error.ts';
import {
  checkImageBytes,
  checkPixelCount,
  type ImageLimits,
  isCompleteImage,
  readImageSize,
  type SupportedImageFormat,
} from '../../../core/image/sniff.ts';

/** A decoded image: `width`×`height`×4 bytes, row-major, straight alpha. */
export interface BrowserImage {
  rgba: Uint8ClampedArray;
  width: number;
  height: number;
  format: SupportedImageFormat;
}

/**
 * Decodes a JPEG or PNG Blob (a `File` from an `<input type="file">`, a fetch body).
 *
 * `colorSpaceConversion: 'none'` keeps the file's own values (no ICC or gamma conversion) and
 * `premultiplyAlpha: 'none'` keeps alpha straight, both as sharp does on the server; EXIF
 * orientation is applied on both sides. The canvas that reads the pixels back stores them
 * premultiplied, so translucent pixels can come back ±1 level off; opaque ones are exact.
 * @throws ImageDecodeError for empty, non-image, unsupported, truncated, undecodable or too-large input
 */
export async function decodeImageInBrowser(file: Blob, limits: ImageLimits = {}): Promise<BrowserImage> {
  const source =
    typeof (file as File).name === 'string' && (file as File).name !== '' ? (file as File).name : undefined;
  const bytes = new Uint8Array(await file.arrayBuffer());
  const format = checkImageBytes(bytes, limits, source);
  const claimed = readImageSize(bytes, format);
  if (claimed) checkPixelCount(claimed.width, claimed.height, limits, source);
  if (!isCompleteImage(bytes, format)) {
    throw new ImageDecodeError(
      'truncated',
      `the ${format === 'jpeg' ? 'JPEG' : 'PNG'} is truncated: its data ends early`,
      source,
    );
  }

  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(new Blob([bytes], { type: `image/${format}` }), {
      colorSpaceConversion: 'none',
      premultiplyAlpha: 'none',
      imageOrientation: 'from-image',
    });
  } catch (err) {
    throw new ImageDecodeError(
      'corrupt',
      `the ${format === 'jpeg' ? 'JPEG' : 'PNG'} could not be decoded (${(err as Error).message})`,
      source,
      { cause: err },
    );
  }
  try {
    const { width, height } = bitmap;
    checkPixelCount(width, height, limits, source);
    const canvas = new OffscreenCanvas(width, height);
    const ctx = canvas.getContext('2d', { willReadFrequently: true, colorSpace: 'srgb' });
    if (!ctx) throw new Error('this browser gives no 2D canvas context');
    ctx.drawImage(bitmap, 0, 0);
    const { data } = ctx.getImageData(0, 0, width, height, { colorSpace: 'srgb' });
    return { rgba: data, width, height, format };
  } finally {
    bitmap.close();
  }
}
