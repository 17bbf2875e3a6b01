/**
 * Caption data sets: images with several reference captions each, cut into splits.
 *
 * Two layouts are read, detected from the directory's contents:
 * - Karpathy's split file, `dataset_<name>.json` (`dataset_flickr8k.json`, `dataset_coco.json`):
 *   `{ images: [{ filename, filepath?, split, sentences: [{ raw, tokens? }] }] }`, with the images
 *   under `images/[filepath/]` or `[filepath/]` beside the JSON;
 * - COCO's own `annotations/captions_{train,val}<year>.json`, images under `<split><year>/` or
 *   `images/<split><year>/`; the split is the file's (COCO has no test captions).
 *
 * Node only.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { z } from 'zod';
import { getTokenizer } from '../../core/text/tokenize.ts';
import { Vocabulary } from '../../core/vocab.ts';
import { describeIssues } from '../../core/zod-issues.ts';

export type CaptionSplit = 'train' | 'val' | 'test' | 'restval';

const CAPTION_SPLITS: readonly CaptionSplit[] = ['train', 'val', 'test', 'restval'];

/** One image and its reference captions (raw text, untokenised). */
export interface CaptionImage {
  /** Unique within the data set: the file name without its extension. */
  id: string;
  /** Absolute path of the image file. */
  path: string;
  split: CaptionSplit;
  captions: string[];
}

export interface CaptionDataset {
  /** `flickr8k`, `coco`, …: from the JSON's `dataset` field or its file name. */
  name: string;
  /** The directory the data set was read from. */
  dir: string;
  images: CaptionImage[];
}

/** The splits a model learns from: Karpathy's COCO split trains on `restval` too. */
export const TRAINING_SPLITS: readonly CaptionSplit[] = ['train', 'restval'];

/** The paper's minimum word frequency for the caption vocabulary. */
const CAPTION_MIN_FREQ = 5;

/**
 * Reads a caption data set from `dir` (or from a Karpathy JSON file given directly).
 * @throws Error naming the path: no known layout, unreadable or malformed JSON, missing images
 */
export async function loadCaptionDataset(dir: string): Promise<CaptionDataset> {
  if (!existsSync(dir)) throw new Error(`${dir}: caption data set not found`);
  if (statSync(dir).isFile()) {
    if (extname(dir) !== '.json')
      throw new Error(`${dir}: expected a directory or a Karpathy-style dataset_*.json file`);
    return readKarpathy(dir);
  }
  const karpathy = readdirSync(dir)
    .filter((n) => /^dataset_.+\.json$/.test(n))
    .sort();
  if (karpathy.length > 1) {
    throw new Error(`${dir}: more than one split file (${karpathy.join(', ')}); pass the one to use as the path`);
  }
  if (karpathy.length === 1) return readKarpathy(join(dir, karpathy[0]!));
  const annotations = join(dir, 'annotations');
  const coco = existsSync(annotations)
    ? readdirSync(annotations)
        .filter((n) => COCO_FILE.test(n))
        .sort()
    : [];
  if (coco.length > 0) return readCoco(dir, coco);
  throw new Error(
    `${dir}: not a caption data set (expected a Karpathy-style dataset_<name>.json, ` +
      'or COCO annotations/captions_{train,val}<year>.json)',
  );
}

/** Reads and parses JSON, and validates it, with the path in every error. */
async function readJson<T>(path: string, schema: z.ZodType<T>): Promise<T> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${path}: invalid JSON: ${(err as Error).message}`, { cause: err });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error.issues, { max: 3, bracketed: true });
    throw new Error(`${path}: not the expected layout: ${issues}`);
  }
  return parsed.data;
}

const KarpathySentence = z
  .object({ raw: z.string().optional(), tokens: z.array(z.string()).optional() })
  .refine((s) => s.raw !== undefined || s.tokens !== undefined, 'a sentence needs "raw" or "tokens"');

const KarpathyFile = z.object({
  dataset: z.string().optional(),
  images: z.array(
    z.object({
      filename: z.string().min(1),
      filepath: z.string().optional(),
      split: z.enum(CAPTION_SPLITS as [CaptionSplit, ...CaptionSplit[]]),
      sentences: z.array(KarpathySentence).min(1),
    }),
  ),
});

async function readKarpathy(jsonPath: string): Promise<CaptionDataset> {
  const file = await readJson(jsonPath, KarpathyFile);
  const dir = dirname(jsonPath);
  const name = file.dataset ?? basename(jsonPath, '.json').replace(/^dataset_/, '');
  const relative = file.images.map((im) => join(im.filepath ?? '', im.filename));
  const root = [join(dir, 'images'), dir].find((r) => relative.length === 0 || existsSync(join(r, relative[0]!)));
  if (root === undefined) {
    throw new Error(`${jsonPath}: image '${relative[0]}' not found under ${join(dir, 'images')} or ${dir}`);
  }
  const images = file.images.map((im, i) => ({
    id: stem(im.filename),
    path: join(root, relative[i]!),
    split: im.split,
    captions: im.sentences.map((s) => s.raw ?? s.tokens!.join(' ')),
  }));
  return finish({ name, dir, images }, jsonPath);
}

const COCO_FILE = /^captions_(train|val)(\d{4})\.json$/;

const CocoFile = z.object({
  images: z.array(z.object({ id: z.number(), file_name: z.string().min(1) })),
  annotations: z.array(z.object({ image_id: z.number(), caption: z.string() })),
});

async function readCoco(dir: string, files: string[]): Promise<CaptionDataset> {
  const images: CaptionImage[] = [];
  for (const name of files) {
    const [, split, year] = COCO_FILE.exec(name)!;
    const jsonPath = join(dir, 'annotations', name);
    const file = await readJson(jsonPath, CocoFile);
    const folder = `${split}${year}`;
    const root = [join(dir, folder), join(dir, 'images', folder)].find((r) => existsSync(r));
    if (root === undefined)
      throw new Error(`${jsonPath}: image folder ${join(dir, folder)} (or ${join(dir, 'images', folder)}) not found`);
    const byId = new Map<number, CaptionImage>();
    for (const im of file.images) {
      const entry: CaptionImage = {
        id: stem(im.file_name),
        path: join(root, im.file_name),
        split: split as CaptionSplit,
        captions: [],
      };
      byId.set(im.id, entry);
      images.push(entry);
    }
    file.annotations.forEach((a, i) => {
      const image = byId.get(a.image_id);
      if (!image)
        throw new Error(`${jsonPath}: annotations[${i}] refers to image_id ${a.image_id}, which is not in "images"`);
      image.captions.push(a.caption.trim());
    });
    const bare = images.find((im) => im.captions.length === 0);
    if (bare) throw new Error(`${jsonPath}: image '${bare.id}' has no captions`);
  }
  return finish({ name: 'coco', dir, images }, join(dir, 'annotations'));
}

function stem(fileName: string): string {
  return basename(fileName, extname(fileName));
}

/** Refuses duplicate ids and missing image files, naming the first few. */
function finish(dataset: CaptionDataset, source: string): CaptionDataset {
  const seen = new Set<string>();
  for (const im of dataset.images) {
    if (seen.has(im.id)) throw new Error(`${source}: image id '${im.id}' appears twice`);
    seen.add(im.id);
  }
  const missing = dataset.images.filter((im) => !existsSync(im.path));
  if (missing.length > 0) {
    const shown = missing
      .slice(0, 3)
      .map((im) => im.path)
      .join(', ');
    throw new Error(
      `${source}: ${missing.length} of ${dataset.images.length} image files are missing (${shown}${missing.length > 3 ? ', …' : ''})`,
    );
  }
  return dataset;
}

/** The images of the given splits, in data set order. */
export function imagesOf(dataset: CaptionDataset, splits: readonly CaptionSplit[]): CaptionImage[] {
  return dataset.images.filter((im) => splits.includes(im.split));
}

/** Every caption of the given splits, tokenised with the `caption` tokeniser. */
function tokenisedCaptions(dataset: CaptionDataset, splits: readonly CaptionSplit[] = TRAINING_SPLITS): string[][] {
  const { tokenize } = getTokenizer('caption');
  return imagesOf(dataset, splits).flatMap((im) => im.captions.map((c) => tokenize(c, 'en')));
}

/** How often each word occurs in the captions of `splits` (for rare-word statistics). */
export function captionWordCounts(
  dataset: CaptionDataset,
  splits: readonly CaptionSplit[] = TRAINING_SPLITS,
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const sentence of tokenisedCaptions(dataset, splits)) {
    for (const word of sentence) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return counts;
}

/** Options of {@link buildCaptionVocabulary}. */
export interface CaptionVocabularyOptions {
  /** Words rarer than this become `<unk>`. @default {@link CAPTION_MIN_FREQ} */
  minFreq?: number;
  /** Whose captions count. @default {@link TRAINING_SPLITS} */
  splits?: readonly CaptionSplit[];
}

/**
 * The target vocabulary of a caption model: training captions tokenised with `caption`, words
 * kept from `minFreq` occurrences. The result keeps each word's training count
 * ({@link Vocabulary.frequencies}).
 */
export function buildCaptionVocabulary(dataset: CaptionDataset, opts: CaptionVocabularyOptions = {}): Vocabulary {
  const splits = opts.splits ?? TRAINING_SPLITS;
  const sentences = tokenisedCaptions(dataset, splits);
  if (sentences.length === 0)
    throw new Error(`${dataset.dir}: no captions in split(s) ${splits.join(', ')} to build a vocabulary from`);
  return Vocabulary.build(sentences, { minFreq: opts.minFreq ?? CAPTION_MIN_FREQ });
}
