/**
 * core/image/decode-node.ts: what it decodes, and the reason and message of everything it refuses
 * (issue #6: empty, truncated JPEG, a PDF renamed .jpg, a 40-megapixel PNG).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { decodeImage, type ImageDecodeError } from '../core/image/decode-node.ts';
import { isCompleteImage, readImageSize, sniffImageFormat } from '../core/image/sniff.ts';

let dir: string;
let jpeg: Buffer;
let png: Buffer;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-decode-'));
  const noise = Buffer.from(Array.from({ length: 90 * 60 * 3 }, (_, i) => (i * 7919) % 251));
  const raw = () => sharp(noise, { raw: { width: 90, height: 60, channels: 3 } });
  jpeg = await raw().jpeg({ quality: 80 }).toBuffer();
  png = await raw().png().toBuffer();
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes bytes under a file name and decodes that path. */
async function decodeFile(name: string, bytes: Uint8Array) {
  const path = join(dir, name);
  await writeFile(path, bytes);
  return { path, result: decodeImage(path) };
}

/** A PNG chunk: length, type, data, CRC-32 of type + data. */
function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  let crc = 0xffffffff;
  for (const byte of body) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE((crc ^ 0xffffffff) >>> 0, 8 + data.length);
  return out;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A greyscale PNG header claiming width × height; with `rows`, that many zero rows of data. */
function pngClaiming(width: number, height: number, rows = 0): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(rows * (width + 1)))),
  ]);
}

describe('decodeImage decodes', () => {
  test('a JPEG and a PNG to straight RGBA of their size', async () => {
    for (const [bytes, format] of [
      [jpeg, 'jpeg'],
      [png, 'png'],
    ] as const) {
      const img = await decodeImage(bytes);
      assert.deepEqual([img.width, img.height, img.format, img.rgba.length], [90, 60, format, 90 * 60 * 4]);
      assert.ok(
        img.rgba.every((v, i) => i % 4 !== 3 || v === 255),
        'opaque input gets alpha 255',
      );
    }
    // PNG is lossless: the first pixel is the one written.
    assert.deepEqual(Array.from((await decodeImage(png)).rgba.subarray(0, 4)), [0, 7919 % 251, (2 * 7919) % 251, 255]);
  });

  test('by content, not by name: a PNG called .jpg is a PNG', async () => {
    const { result } = await decodeFile('really-a-png.jpg', png);
    assert.equal((await result).format, 'png');
  });

  test('applies EXIF orientation and expands greyscale to RGB', async () => {
    const rotated = await sharp(jpeg).withMetadata({ orientation: 6 }).toBuffer();
    const img = await decodeImage(rotated);
    assert.deepEqual([img.width, img.height], [60, 90]);
    const grey = await decodeImage(await sharp(png).greyscale().png().toBuffer());
    assert.ok(
      grey.rgba.every((v, i) => i % 4 === 3 || v === grey.rgba[i - (i % 4)]),
      'R = G = B',
    );
  });
});

describe('decodeImage refuses', () => {
  test('an empty file', async () => {
    const { path, result } = await decodeFile('empty.jpg', new Uint8Array(0));
    await assert.rejects(
      result,
      (err: ImageDecodeError) => err.reason === 'empty' && err.message === `${path}: the image is empty (0 bytes)`,
    );
  });

  test('a truncated JPEG, naming the file', async () => {
    const { path, result } = await decodeFile('cut.jpg', jpeg.subarray(0, Math.floor(jpeg.length * 0.6)));
    await assert.rejects(
      result,
      (err: ImageDecodeError) => err.reason === 'truncated' && err.message.startsWith(`${path}: the JPEG is truncated`),
    );
  });

  test('a truncated PNG, and a PNG damaged in the middle', async () => {
    await assert.rejects(decodeImage(png.subarray(0, png.length - 40)), { reason: 'truncated' });
    const damaged = Buffer.from(png);
    for (let i = 100; i < 160; i++) damaged[i] ^= 0x5a;
    await assert.rejects(decodeImage(damaged), { reason: 'corrupt' });
  });

  test('a PDF renamed .jpg', async () => {
    const pdf = Buffer.from('%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n');
    const { path, result } = await decodeFile('invoice.jpg', pdf);
    await assert.rejects(
      result,
      (err: ImageDecodeError) => err.reason === 'not-an-image' && err.message.includes(path) && /PDF/.test(err.message),
    );
  });

  test('text, and images in other formats (with their name)', async () => {
    await assert.rejects(decodeImage(Buffer.from('hello, world')), { reason: 'not-an-image' });
    const webp = await sharp(png).webp().toBuffer();
    await assert.rejects(decodeImage(webp), { reason: 'unsupported-format', message: /WEBP images are not supported/ });
    const gif = await sharp(png).gif().toBuffer();
    await assert.rejects(decodeImage(gif), { reason: 'unsupported-format', message: /GIF/ });
  });

  test('a 40-megapixel PNG, from its header', async () => {
    // A real 8000×5000 PNG: one solid colour compresses to about 120 kB.
    const big = await sharp({ create: { width: 8000, height: 5000, channels: 3, background: '#808080' } })
      .png({ compressionLevel: 1 })
      .toBuffer();
    const { path, result } = await decodeFile('huge.png', big);
    await assert.rejects(
      result,
      (err: ImageDecodeError) =>
        err.reason === 'too-large' && err.message.startsWith(`${path}: the image is 8000×5000 (40.0 megapixels)`),
    );
    // Its header alone, with one row of data: were it decoded, it would fail as truncated. It fails
    // as too large, so the size is checked before decoding.
    await assert.rejects(decodeImage(pngClaiming(8000, 5000, 1)), { reason: 'too-large' });
    // The limit is an option.
    await assert.rejects(decodeImage(png, { maxPixels: 90 * 60 - 1 }), { reason: 'too-large' });
    assert.equal((await decodeImage(png, { maxPixels: 90 * 60 })).width, 90);
  });

  test('a file over maxBytes', async () => {
    const { path, result } = await decodeFile('big.jpg', jpeg);
    assert.equal((await result).width, 90);
    await assert.rejects(decodeImage(path, { maxBytes: jpeg.length - 1 }), {
      reason: 'too-large',
      message: /more than the limit/,
    });
    await assert.rejects(decodeImage(jpeg, { maxBytes: jpeg.length - 1 }), { reason: 'too-large' });
  });
});

describe('sniffing', () => {
  test('formats, header sizes and end markers', async () => {
    assert.equal(sniffImageFormat(jpeg), 'jpeg');
    assert.equal(sniffImageFormat(png), 'png');
    assert.equal(sniffImageFormat(Buffer.from('%PDF-1.4')), 'pdf');
    assert.deepEqual(readImageSize(jpeg, 'jpeg'), { width: 90, height: 60 });
    assert.deepEqual(readImageSize(pngClaiming(8000, 5000), 'png'), { width: 8000, height: 5000 });
    assert.ok(isCompleteImage(jpeg, 'jpeg') && isCompleteImage(png, 'png'));
    assert.ok(!isCompleteImage(jpeg.subarray(0, jpeg.length - 2), 'jpeg'));
    // Bytes after the end marker (a phone's appended video, say) do not make a JPEG incomplete.
    assert.ok(isCompleteImage(Buffer.concat([jpeg, Buffer.alloc(100, 0xab)]), 'jpeg'));
  });
});
