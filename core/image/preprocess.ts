/**
 * The pixels a caption model sees: centre square crop, resize, flatten alpha, normalise to CHW.
 *
 * Platform code only decodes a file to RGBA (sharp on Node, a canvas in the browser); everything
 * after decoding happens here, in plain arithmetic on doubles, so a server and a browser given the
 * same decoded pixels produce bit-identical tensors. That is why the resize is written out here
 * instead of using sharp's or the canvas's own scaler: those differ from each other and between
 * versions.
 *
 * Isomorphic: no Node APIs.
 */

/** How an image becomes a model input. */
export interface ImageSpec {
  /** Side of the square input in pixels. */
  size: number;
  /** Per-channel mean (R, G, B) on the 0..1 scale, subtracted before dividing by {@link ImageSpec.std}. */
  mean: [number, number, number];
  /** Per-channel standard deviation (R, G, B) on the 0..1 scale. */
  std: [number, number, number];
}

/**
 * 128×128 with ImageNet statistics. 128 because the Flickr8k copy in shared/data is stored at
 * 128×128: a larger input would only upsample, a smaller one throws detail away. ImageNet's
 * mean/std so a pretrained encoder (`--encoder some.onnx`) gets the inputs it was trained on.
 */
export const DEFAULT_IMAGE_SPEC: ImageSpec = Object.freeze<ImageSpec>({
  size: 128,
  mean: [0.485, 0.456, 0.406],
  std: [0.229, 0.224, 0.225],
});

/** Checks a spec at the public boundary, naming the field that is wrong. */
function assertImageSpec(spec: ImageSpec): void {
  if (!Number.isInteger(spec.size) || spec.size < 1)
    throw new RangeError(`image spec: 'size' must be a positive integer, got ${spec.size}`);
  for (const key of ['mean', 'std'] as const) {
    const v = spec[key];
    if (!Array.isArray(v) || v.length !== 3 || v.some((x) => !Number.isFinite(x))) {
      throw new TypeError(`image spec: '${key}' must be three finite numbers, got ${JSON.stringify(v)}`);
    }
  }
  if (spec.std.some((s) => s <= 0))
    throw new RangeError(`image spec: 'std' must be positive, got ${JSON.stringify(spec.std)}`);
}

/** One output pixel's taps along one axis: source indices and their weights (summing to 1). */
interface AxisTaps {
  index: Int32Array;
  weight: Float64Array;
  /** Offsets into index/weight: output i uses entries start[i] .. start[i+1]-1. */
  start: Int32Array;
}

/**
 * Resampling taps for `src` pixels onto `dst` pixels. Shrinking uses exact area coverage (each
 * source pixel weighted by how much of it falls inside the output pixel), which cannot alias;
 * enlarging uses bilinear interpolation between pixel centres, which is what area coverage tends
 * to as the scale passes 1. The same size gives weight 1 on the same pixel.
 */
function axisTaps(src: number, dst: number): AxisTaps {
  const scale = src / dst;
  const index: number[] = [];
  const weight: number[] = [];
  const start = new Int32Array(dst + 1);
  for (let i = 0; i < dst; i++) {
    start[i] = index.length;
    if (scale >= 1) {
      const lo = i * scale;
      const hi = lo + scale;
      for (let j = Math.floor(lo); j < hi && j < src; j++) {
        const covered = Math.min(hi, j + 1) - Math.max(lo, j);
        if (covered > 0) {
          index.push(j);
          weight.push(covered / scale);
        }
      }
    } else {
      const x = Math.min(Math.max((i + 0.5) * scale - 0.5, 0), src - 1);
      const j = Math.floor(x);
      const f = x - j;
      index.push(j);
      weight.push(1 - f);
      if (f > 0) {
        index.push(j + 1);
        weight.push(f);
      }
    }
  }
  start[dst] = index.length;
  return { index: Int32Array.from(index), weight: Float64Array.from(weight), start };
}

/**
 * Crops the centred square of an RGBA image and resizes it to `size`×`size` RGBA.
 *
 * The crop side is min(width, height), offset by floor of half the excess, so odd excesses drop
 * the extra column or row on the right or bottom. Colour is resampled premultiplied by alpha (and
 * divided back out), so the arbitrary colour stored under fully transparent pixels does not bleed
 * into their neighbours; this also keeps the browser's canvas, which loses that colour, in step
 * with sharp, which keeps it. Values are rounded to the nearest level.
 * @param rgba `width`×`height`×4 bytes, row-major, straight (not premultiplied) alpha
 */
export function centreCropResize(
  rgba: Uint8Array | Uint8ClampedArray,
  width: number,
  height: number,
  size: number,
): Uint8ClampedArray {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new RangeError(`centreCropResize: width and height must be positive integers, got ${width}×${height}`);
  }
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`centreCropResize: 'size' must be a positive integer, got ${size}`);
  if (rgba.length !== width * height * 4) {
    throw new RangeError(
      `centreCropResize: expected ${width}×${height}×4 = ${width * height * 4} bytes of RGBA, got ${rgba.length}`,
    );
  }
  const side = Math.min(width, height);
  const x0 = Math.floor((width - side) / 2);
  const y0 = Math.floor((height - side) / 2);
  const out = new Uint8ClampedArray(size * size * 4);

  if (side === size) {
    for (let y = 0; y < size; y++) {
      const from = ((y0 + y) * width + x0) * 4;
      out.set(rgba.subarray(from, from + size * 4), y * size * 4);
    }
    return out;
  }

  const taps = axisTaps(side, size);
  // Horizontal pass over the crop's rows, then vertical; both use the same taps (square crop).
  // Colour is carried premultiplied (times alpha/255) through both passes.
  const rows = new Float64Array(side * size * 4);
  for (let y = 0; y < side; y++) {
    const rowBase = ((y0 + y) * width + x0) * 4;
    for (let i = 0; i < size; i++) {
      let r = 0,
        g = 0,
        b = 0,
        a = 0;
      for (let t = taps.start[i]!; t < taps.start[i + 1]!; t++) {
        const p = rowBase + taps.index[t]! * 4;
        const alpha = rgba[p + 3]!;
        const w = taps.weight[t]!;
        const wa = (w * alpha) / 255;
        r += rgba[p]! * wa;
        g += rgba[p + 1]! * wa;
        b += rgba[p + 2]! * wa;
        a += alpha * w;
      }
      const o = (y * size + i) * 4;
      rows[o] = r;
      rows[o + 1] = g;
      rows[o + 2] = b;
      rows[o + 3] = a;
    }
  }
  for (let j = 0; j < size; j++) {
    for (let i = 0; i < size; i++) {
      let r = 0,
        g = 0,
        b = 0,
        a = 0;
      for (let t = taps.start[j]!; t < taps.start[j + 1]!; t++) {
        const p = (taps.index[t]! * size + i) * 4;
        const w = taps.weight[t]!;
        r += rows[p]! * w;
        g += rows[p + 1]! * w;
        b += rows[p + 2]! * w;
        a += rows[p + 3]! * w;
      }
      // Un-premultiply; Uint8ClampedArray then rounds half to even and clamps, on every engine.
      const o = (j * size + i) * 4;
      const unpremultiply = a > 0 ? 255 / a : 0;
      out[o] = r * unpremultiply;
      out[o + 1] = g * unpremultiply;
      out[o + 2] = b * unpremultiply;
      out[o + 3] = a;
    }
  }
  return out;
}

/**
 * The background translucent pixels are composited over: the spec's mean colour, so a fully
 * transparent area normalises to zero, the same input a model sees for "no signal".
 */
export function backgroundOf(spec: ImageSpec): [number, number, number] {
  return [Math.round(spec.mean[0] * 255), Math.round(spec.mean[1] * 255), Math.round(spec.mean[2] * 255)];
}

/**
 * Flattens RGBA to RGB bytes over {@link backgroundOf}(spec). Done in whole levels so the training
 * cache (which stores these bytes) and {@link toNormalisedCHW} see exactly the same values.
 */
export function flattenAlpha(rgba: Uint8Array | Uint8ClampedArray, spec: ImageSpec): Uint8Array {
  if (rgba.length % 4 !== 0) throw new RangeError(`flattenAlpha: RGBA length ${rgba.length} is not a multiple of 4`);
  const bg = backgroundOf(spec);
  const n = rgba.length / 4;
  const rgb = new Uint8Array(n * 3);
  for (let p = 0; p < n; p++) {
    const a = rgba[p * 4 + 3]!;
    for (let c = 0; c < 3; c++) {
      const v = rgba[p * 4 + c]!;
      rgb[p * 3 + c] = a === 255 ? v : Math.round((v * a + bg[c]! * (255 - a)) / 255);
    }
  }
  return rgb;
}

/** Level (0..255) → normalised value, per channel: 3×256 entries. */
function normalisationTable(spec: ImageSpec): Float32Array {
  const table = new Float32Array(3 * 256);
  for (let c = 0; c < 3; c++) {
    for (let v = 0; v < 256; v++) table[c * 256 + v] = (v / 255 - spec.mean[c]!) / spec.std[c]!;
  }
  return table;
}

/**
 * Writes RGB bytes (`size`×`size`×3, HWC) as normalised CHW floats into `out` at `offset`.
 * @returns `out`
 */
export function rgbToNormalisedCHW(
  rgb: Uint8Array,
  size: number,
  spec: ImageSpec,
  out?: Float32Array,
  offset = 0,
): Float32Array {
  const plane = size * size;
  if (rgb.length !== plane * 3)
    throw new RangeError(`rgbToNormalisedCHW: expected ${size}×${size}×3 = ${plane * 3} bytes, got ${rgb.length}`);
  const target = out ?? new Float32Array(3 * plane);
  if (offset + 3 * plane > target.length)
    throw new RangeError(`rgbToNormalisedCHW: output too small for ${3 * plane} values at offset ${offset}`);
  const table = normalisationTable(spec);
  for (let p = 0; p < plane; p++) {
    target[offset + p] = table[rgb[p * 3]!]!;
    target[offset + plane + p] = table[256 + rgb[p * 3 + 1]!]!;
    target[offset + 2 * plane + p] = table[512 + rgb[p * 3 + 2]!]!;
  }
  return target;
}

/**
 * `size`×`size` RGBA → a [3, size, size] float tensor: alpha flattened over the mean colour, then
 * `(level / 255 − mean) / std` per channel.
 */
export function toNormalisedCHW(rgba: Uint8Array | Uint8ClampedArray, size: number, spec: ImageSpec): Float32Array {
  if (rgba.length !== size * size * 4)
    throw new RangeError(
      `toNormalisedCHW: expected ${size}×${size}×4 = ${size * size * 4} bytes of RGBA, got ${rgba.length}`,
    );
  return rgbToNormalisedCHW(flattenAlpha(rgba, spec), size, spec);
}

/** Decoded RGBA of any size → the model's [3, spec.size, spec.size] input. */
export function preprocessRgba(
  rgba: Uint8Array | Uint8ClampedArray,
  width: number,
  height: number,
  spec: ImageSpec = DEFAULT_IMAGE_SPEC,
): Float32Array {
  assertImageSpec(spec);
  return toNormalisedCHW(centreCropResize(rgba, width, height, spec.size), spec.size, spec);
}
