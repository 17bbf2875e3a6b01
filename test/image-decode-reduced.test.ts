/**
 * Decoding at reduced size (core/image/decode-node.ts `reduceAbovePixels`, which `frost serve`
 * uses to bound an upload's memory): large images come out with a short side of 512 and the
 * picture's proportions and orientation, small ones exactly as without the option.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import sharp from 'sharp';
import { decodeImage } from '../core/image/decode-node.ts';

const gradient = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 60, b: 20 } } }).composite([
    {
      input: Buffer.from(
        `<svg width="${width}" height="${height}"><circle cx="${width / 3}" cy="${height / 2}" r="${height / 4}" fill="blue"/></svg>`,
      ),
    },
  ]);

test('a large JPEG or PNG is decoded with a short side of 512; its own size is reported', async () => {
  const jpeg = await gradient(3000, 2000).jpeg().toBuffer();
  const png = await gradient(3000, 2000).png().toBuffer();
  for (const bytes of [jpeg, png]) {
    const im = await decodeImage(bytes, { reduceAbovePixels: 4_000_000 });
    assert.deepEqual([im.width, im.height, im.rgba.length], [768, 512, 768 * 512 * 4]);
    assert.deepEqual(im.original, { width: 3000, height: 2000 });
  }
  // EXIF orientation 6 (rotate 90°): the reduced image and the reported size are upright.
  const rotated = await gradient(3000, 2000).jpeg().withMetadata({ orientation: 6 }).toBuffer();
  const im = await decodeImage(rotated, { reduceAbovePixels: 4_000_000 });
  assert.deepEqual([im.width, im.height], [512, 768]);
  assert.deepEqual(im.original, { width: 2000, height: 3000 });
});

test('an image under the threshold decodes exactly as without it', async () => {
  const bytes = await gradient(640, 480).jpeg().toBuffer();
  const plain = await decodeImage(bytes);
  const withOption = await decodeImage(bytes, { reduceAbovePixels: 4_000_000 });
  assert.equal(withOption.original, undefined);
  assert.deepEqual([withOption.width, withOption.height], [640, 480]);
  assert.ok(Buffer.from(withOption.rgba).equals(Buffer.from(plain.rgba)));
});
