/**
 * The server's image preprocessing thread (serve/image-preprocess-thread.ts): the same tensor as
 * preprocessRgba on the main thread, computed in another thread, buffers moved rather than copied,
 * clear errors, and a new thread after the old one ends.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { threadId } from 'node:worker_threads';
import { DEFAULT_IMAGE_SPEC, preprocessRgba, type ImageSpec } from '../core/image/preprocess.ts';
import { ImagePreprocessThread } from '../serve/image-preprocess-thread.ts';

const thread = new ImagePreprocessThread();
after(() => thread.close());

/** A deterministic RGBA image with some translucent pixels. */
function image(width: number, height: number, seed: number): Uint8Array {
  const rgba = new Uint8Array(width * height * 4);
  let s = seed;
  for (let i = 0; i < rgba.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    rgba[i] = i % 4 === 3 ? (s >>> 24 < 32 ? 128 : 255) : s >>> 24;
  }
  return rgba;
}

test('equals preprocessRgba on the main thread, bit for bit, and runs in another thread', async () => {
  const spec: ImageSpec = { size: 37, mean: [0.5, 0.4, 0.3], std: [0.2, 0.25, 0.3] };
  for (const [w, h, s] of [
    [640, 480, DEFAULT_IMAGE_SPEC],
    [33, 91, spec],
    [5, 5, spec],
    [300, 200, DEFAULT_IMAGE_SPEC],
  ] as const) {
    const rgba = image(w, h, w * 31 + h);
    const want = preprocessRgba(rgba, w, h, s);
    const got = await thread.run(rgba.slice(), w, h, s);
    assert.deepEqual(got, want, `${w}×${h}`);
  }
  assert.notEqual(thread.threadId, 0);
  assert.notEqual(thread.threadId, threadId, 'the work must leave the main thread');
});

test('a view of a larger buffer is copied; a whole buffer moves to the thread', async () => {
  const backing = image(64, 64, 7);
  const padded = new Uint8Array(backing.length + 8);
  padded.set(backing, 8);
  const view = padded.subarray(8);
  const fromView = await thread.run(view, 64, 64, DEFAULT_IMAGE_SPEC);
  assert.equal(padded.byteLength, backing.length + 8, 'a view must not detach the buffer it looks into');
  assert.deepEqual(fromView, preprocessRgba(backing, 64, 64));
  const whole = backing.slice();
  const fromWhole = await thread.run(whole, 64, 64, DEFAULT_IMAGE_SPEC);
  assert.equal(whole.byteLength, 0, 'the buffer was moved, not copied');
  assert.deepEqual(fromWhole, fromView);
});

test('a bad job fails with the reason and the thread goes on; after close() a new thread takes over', async () => {
  await assert.rejects(
    thread.run(image(8, 8, 1), 8, 8, { size: 0, mean: [0, 0, 0], std: [1, 1, 1] }),
    /image preprocessing failed: image spec: 'size' must be a positive integer, got 0/,
  );
  const before = thread.threadId;
  assert.deepEqual(await thread.run(image(8, 8, 2), 8, 8, DEFAULT_IMAGE_SPEC), preprocessRgba(image(8, 8, 2), 8, 8));
  assert.equal(thread.threadId, before, 'a failed job must not cost the thread');
  await thread.close();
  assert.equal(thread.threadId, 0);
  assert.deepEqual(await thread.run(image(9, 7, 3), 9, 7, DEFAULT_IMAGE_SPEC), preprocessRgba(image(9, 7, 3), 9, 7));
  assert.notEqual(thread.threadId, before);
});

test('closing a thread fails the jobs it held, not those of the thread that replaces it', async () => {
  const big = image(1500, 1000, 4);
  const inFlight = thread.run(big, 1500, 1000, DEFAULT_IMAGE_SPEC);
  const closing = thread.close();
  const next = thread.run(image(16, 12, 5), 16, 12, DEFAULT_IMAGE_SPEC);
  await assert.rejects(inFlight, /image preprocessing thread exited/);
  await closing;
  assert.deepEqual(await next, preprocessRgba(image(16, 12, 5), 16, 12));
});
