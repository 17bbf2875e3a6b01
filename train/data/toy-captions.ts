/**
 * A synthetic caption data set for tests: coloured shapes on coloured backgrounds, captioned "a red
 * circle on a blue background" in five phrasings. Made in seconds, deterministic from a seed, and
 * written in the Karpathy layout (`dataset_toy.json` + `images/*.png`), so it goes through the same
 * reader, cache and training path as Flickr8k. Its vocabulary has a few dozen words, so a tiny model
 * learns it in seconds: what it must get right (colour, shape, background) is all in the pixels.
 *
 * Node only (sharp renders the PNGs).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { SeededRandom } from '../../core/random.ts';
import type { CaptionSplit } from './captions.ts';

/** Colour names and their sRGB values: far apart, so each is unmistakable after JPEG-free rendering. */
export const TOY_COLOURS: Readonly<Record<string, string>> = Object.freeze({
  red: '#d62728',
  green: '#2ca02c',
  blue: '#1f5fd0',
  yellow: '#f5d90a',
  white: '#f4f4f4',
  black: '#141414',
});

const TOY_SHAPES = ['circle', 'square', 'triangle'] as const;
export type ToyShape = (typeof TOY_SHAPES)[number];

/** Five references per image, as in Flickr8k and COCO. */
const PHRASINGS: ReadonlyArray<(c: string, s: string, bg: string) => string> = [
  (c, s, bg) => `a ${c} ${s} on a ${bg} background`,
  (c, s, bg) => `a ${s} that is ${c} on a ${bg} background`,
  (c, s, bg) => `there is a ${c} ${s} on a ${bg} background`,
  (c, s, bg) => `a ${bg} background with a ${c} ${s}`,
  (c, s, bg) => `a ${c} ${s} in front of a ${bg} background`,
];

/** Options of {@link makeToyCaptions}. */
export interface ToyCaptionOptions {
  /** @default 1 */
  seed?: number;
  /** Number of images. @default 96 */
  count?: number;
  /** Side of each square PNG. @default 64 */
  size?: number;
  /** Share of images in val and in test (each), at most 0.5; the rest is train. @default 0.125 */
  heldOut?: number;
}

/** What {@link makeToyCaptions} wrote. */
export interface ToyCaptionSet {
  dir: string;
  jsonPath: string;
  /** Per image: its file name, split, and what it shows. */
  images: Array<{ filename: string; split: CaptionSplit; colour: string; shape: ToyShape; background: string }>;
}

function shapeSvg(shape: ToyShape, cx: number, cy: number, r: number, fill: string): string {
  if (shape === 'circle') return `<circle cx="${cx}" cy="${cy}" r="${r}" fill="${fill}"/>`;
  if (shape === 'square')
    return `<rect x="${cx - r}" y="${cy - r}" width="${2 * r}" height="${2 * r}" fill="${fill}"/>`;
  // Equilateral, pointing up, inscribed in the circle of radius r.
  const dx = (r * Math.sqrt(3)) / 2;
  return `<polygon points="${cx},${cy - r} ${cx + dx},${cy + r / 2} ${cx - dx},${cy + r / 2}" fill="${fill}"/>`;
}

/**
 * Writes the data set to `dir` (created when missing) and returns what it holds.
 * Every image's shape colour differs from its background colour; position and size vary.
 */
export async function makeToyCaptions(dir: string, opts: ToyCaptionOptions = {}): Promise<ToyCaptionSet> {
  const count = opts.count ?? 96;
  const size = opts.size ?? 64;
  const heldOut = opts.heldOut ?? 0.125;
  if (!Number.isInteger(count) || count < 1)
    throw new RangeError(`makeToyCaptions: 'count' must be a positive integer, got ${count}`);
  if (!Number.isInteger(size) || size < 16)
    throw new RangeError(`makeToyCaptions: 'size' must be an integer >= 16, got ${size}`);
  if (!(heldOut > 0 && heldOut <= 0.5))
    throw new RangeError(`makeToyCaptions: 'heldOut' must be in (0, 0.5], got ${heldOut}`);
  // One image in every `period` goes to test and one to val; the period is fixed by heldOut, not
  // count, so a larger set keeps the smaller one's splits.
  const period = Math.max(2, Math.round(1 / heldOut));
  const rng = new SeededRandom(opts.seed ?? 1, 'toy-captions');
  const colours = Object.keys(TOY_COLOURS);

  await mkdir(join(dir, 'images'), { recursive: true });
  const images: ToyCaptionSet['images'] = [];
  const entries: Array<{ filename: string; split: CaptionSplit; sentences: Array<{ raw: string }> }> = [];
  for (let i = 0; i < count; i++) {
    const colour = colours[rng.int(colours.length)]!;
    const others = colours.filter((c) => c !== colour);
    const background = others[rng.int(others.length)]!;
    const shape = TOY_SHAPES[rng.int(TOY_SHAPES.length)]!;
    const r = Math.round(size * (0.18 + 0.12 * rng.next()));
    const cx = Math.round(r + (size - 2 * r) * rng.next());
    const cy = Math.round(r + (size - 2 * r) * rng.next());
    const svg =
      `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}">` +
      `<rect width="${size}" height="${size}" fill="${TOY_COLOURS[background]}"/>${shapeSvg(shape, cx, cy, r, TOY_COLOURS[colour]!)}</svg>`;
    const filename = `toy_${String(i).padStart(4, '0')}.png`;
    await writeFile(join(dir, 'images', filename), await sharp(Buffer.from(svg)).png().toBuffer());
    const split: CaptionSplit = i % period === period - 1 ? 'test' : i % period === period - 2 ? 'val' : 'train';
    images.push({ filename, split, colour, shape, background });
    entries.push({ filename, split, sentences: PHRASINGS.map((p) => ({ raw: p(colour, shape, background) })) });
  }
  const jsonPath = join(dir, 'dataset_toy.json');
  await writeFile(jsonPath, `${JSON.stringify({ dataset: 'toy', images: entries })}\n`);
  return { dir, jsonPath, images };
}
