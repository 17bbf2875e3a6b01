/**
 * Why an image could not be turned into pixels. One error type for the Node decoder, the browser
 * decoder and the HTTP route, so each reason maps to one client-facing answer.
 *
 * Isomorphic: no Node APIs.
 */

/**
 * - `empty`: zero bytes.
 * - `not-an-image`: the bytes are no image format we know (a PDF, text, …), whatever the file name says.
 * - `unsupported-format`: an image, but not JPEG or PNG (GIF, WebP, HEIC, …).
 * - `truncated`: a JPEG or PNG that ends before its image data does.
 * - `corrupt`: a JPEG or PNG whose image data is damaged in some other way.
 * - `too-large`: more bytes or pixels than the limits allow.
 */
export type ImageDecodeReason = 'empty' | 'not-an-image' | 'unsupported-format' | 'truncated' | 'corrupt' | 'too-large';

export class ImageDecodeError extends Error {
  readonly reason: ImageDecodeReason;
  /** The file the bytes came from, when they came from a file. */
  readonly source: string | undefined;

  /** @param detail what was wrong, without the source; the message prefixes the source when known */
  constructor(reason: ImageDecodeReason, detail: string, source?: string, options?: ErrorOptions) {
    super(source === undefined ? detail : `${source}: ${detail}`, options);
    this.name = 'ImageDecodeError';
    this.reason = reason;
    this.source = source;
  }
}
