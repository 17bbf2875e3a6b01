/**
 * core/image/preprocess.ts on hand-made pixels: crop offsets, area and bilinear resampling,
 * premultiplied alpha, flattening over the mean colour, and the CHW layout of the tensor.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  backgroundOf,
  centreCropResize,
  DEFAULT_IMAGE_SPEC,
  flattenAlpha,
  type ImageSpec,
  preprocessRgba,
  toNormalisedCHW,
} from '../core/image/preprocess.ts';

/** An opaque RGBA image whose red channel is `value(x, y)`, green and blue 0. */
function redImage(width: number, height: number, value: (x: number, y: number) => number): Uint8Array {
  const rgba = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      rgba[(y * width + x) * 4] = value(x, y);
      rgba[(y * width + x) * 4 + 3] = 255;
    }
  }
  return rgba;
}

const reds = (rgba: Uint8ClampedArray): number[] => Array.from({ length: rgba.length / 4 }, (_, i) => rgba[i * 4]!);

describe('centreCropResize', () => {
  test('crops the centred square; an odd excess drops the last column', () => {
    // 5×2: the excess of 3 columns leaves 1 on the left, 2 on the right.
    const out = centreCropResize(
      redImage(5, 2, (x, y) => 10 * x + y),
      5,
      2,
      2,
    );
    assert.deepEqual(reds(out), [10, 20, 11, 21]);
  });

  test('shrinks by exact area: 4×4 → 2×2 averages 2×2 blocks', () => {
    const out = centreCropResize(
      redImage(4, 4, (x, y) => (x < 2 ? 0 : 100) + (y < 2 ? 0 : 20)),
      4,
      4,
      2,
    );
    assert.deepEqual(reds(out), [0, 100, 20, 120]);
  });

  test('shrinks by a fractional factor with partial coverage: 3 → 2', () => {
    // Output pixel 0 covers source [0, 1.5): weights 2/3 and 1/3.
    const out = centreCropResize(
      redImage(3, 3, (x) => [0, 90, 180][x]!),
      3,
      3,
      2,
    );
    assert.deepEqual(reds(out), [30, 150, 30, 150]);
  });

  test('enlarges bilinearly between pixel centres: 2 → 4', () => {
    // Centres of the outputs fall at source x = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
    const out = centreCropResize(
      redImage(2, 2, (x) => [0, 200][x]!),
      2,
      2,
      4,
    );
    assert.deepEqual(reds(out).slice(0, 4), [0, 50, 150, 200]);
  });

  test('the colour under fully transparent pixels does not bleed into the result', () => {
    // One opaque red pixel among three transparent green ones.
    const rgba = new Uint8Array([255, 0, 0, 255, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0]);
    assert.deepEqual(Array.from(centreCropResize(rgba, 2, 2, 1)), [255, 0, 0, 64]);
  });

  test('rejects a buffer of the wrong length, saying what it expected', () => {
    assert.throws(() => centreCropResize(new Uint8Array(10), 2, 2, 1), /expected 2×2×4 = 16 bytes of RGBA, got 10/);
  });
});

describe('normalisation', () => {
  const spec: ImageSpec = DEFAULT_IMAGE_SPEC;

  test('flattens translucent pixels over the mean colour, in whole levels', () => {
    const bg = backgroundOf(spec);
    assert.deepEqual(bg, [124, 116, 104]);
    const rgba = new Uint8Array([10, 20, 30, 255, 200, 200, 200, 0, 255, 0, 0, 128]);
    assert.deepEqual(Array.from(flattenAlpha(rgba, spec)), [
      10,
      20,
      30,
      124,
      116,
      104,
      Math.round((255 * 128 + 124 * 127) / 255),
      Math.round((116 * 127) / 255),
      Math.round((104 * 127) / 255),
    ]);
  });

  test('lays the tensor out as CHW with (level/255 − mean)/std; transparent pixels become ≈ 0', () => {
    // 2×2: black, white, pure red, fully transparent.
    const rgba = new Uint8Array([0, 0, 0, 255, 255, 255, 255, 255, 255, 0, 0, 255, 9, 9, 9, 0]);
    const t = toNormalisedCHW(rgba, 2, spec);
    const f = (level: number, c: number) => Math.fround((level / 255 - spec.mean[c]!) / spec.std[c]!);
    assert.deepEqual(Array.from(t), [
      f(0, 0),
      f(255, 0),
      f(255, 0),
      f(124, 0),
      f(0, 1),
      f(255, 1),
      f(0, 1),
      f(116, 1),
      f(0, 2),
      f(255, 2),
      f(0, 2),
      f(104, 2),
    ]);
    for (const c of [0, 1, 2])
      assert.ok(
        Math.abs(t[c * 4 + 3]!) < 0.5 / 255 / spec.std[c]!,
        'the mean colour normalises to within half a level of 0',
      );
  });

  test('preprocessRgba = crop + resize + normalise, at the spec size', () => {
    const rgba = redImage(300, 200, (x, y) => (x + y) % 256);
    const t = preprocessRgba(rgba, 300, 200, spec);
    assert.equal(t.length, 3 * 128 * 128);
    assert.deepEqual(t, toNormalisedCHW(centreCropResize(rgba, 300, 200, 128), 128, spec));
    assert.throws(() => preprocessRgba(rgba, 300, 200, { ...spec, std: [0.2, 0, 0.2] }), /'std' must be positive/);
  });
});
