/**
 * Caption data: the Karpathy and COCO readers, the `caption` tokeniser, the minimum-frequency
 * vocabulary, the on-disk image cache, and the synthetic toy set.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import sharp from 'sharp';
import { decodeImage } from '../core/image/decode-node.ts';
import {
  centreCropResize,
  DEFAULT_IMAGE_SPEC,
  flattenAlpha,
  type ImageSpec,
  rgbToNormalisedCHW,
} from '../core/image/preprocess.ts';
import { getTokenizer } from '../core/text/tokenize.ts';
import {
  buildCaptionVocabulary,
  captionWordCounts,
  type CaptionDataset,
  loadCaptionDataset,
} from '../train/data/captions.ts';
import { loadImageCache, normaliseBatch } from '../train/data/image-cache.ts';
import { resolveDataRoot } from '../train/data/paths.ts';
import { makeToyCaptions, TOY_COLOURS } from '../train/data/toy-captions.ts';

const temps: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'frost-captions-'));
  temps.push(dir);
  return dir;
}
after(async () => {
  for (const dir of temps) await rm(dir, { recursive: true, force: true });
});

/** Writes placeholder files (the readers only check that images exist). */
async function touch(...paths: string[]): Promise<void> {
  for (const p of paths) {
    await mkdir(join(p, '..'), { recursive: true });
    await writeFile(p, 'x');
  }
}

function flickr8kDir(): string | null {
  const root = resolveDataRoot();
  return root && existsSync(join(root, 'flickr8k', 'dataset_flickr8k.json')) ? join(root, 'flickr8k') : null;
}

describe('the caption tokeniser', () => {
  test("lower-cases and deletes ASCII punctuation as Karpathy's prepro does", () => {
    const { tokenize, detokenize } = getTokenizer('caption');
    assert.deepEqual(tokenize('A black dog and a tri-colored dog\'s toy, "playing" on the road .', 'en'), [
      'a',
      'black',
      'dog',
      'and',
      'a',
      'tricolored',
      'dogs',
      'toy',
      'playing',
      'on',
      'the',
      'road',
    ]);
    assert.deepEqual(tokenize('  Two   people\tin [the] snow!  ', 'en'), ['two', 'people', 'in', 'the', 'snow']);
    assert.equal(detokenize(['a', 'dog'], 'en'), 'a dog');
  });
});

describe('reading caption data sets', () => {
  test('Karpathy layout with images under images/, sentences given as raw text or tokens', async () => {
    const dir = await tempDir();
    await touch(join(dir, 'images', 'a.jpg'), join(dir, 'images', 'b.jpg'));
    await writeFile(
      join(dir, 'dataset_mini.json'),
      JSON.stringify({
        images: [
          { filename: 'a.jpg', split: 'train', sentences: [{ raw: 'A dog .' }, { tokens: ['a', 'brown', 'dog'] }] },
          { filename: 'b.jpg', split: 'restval', sentences: [{ raw: 'A cat', tokens: ['ignored'] }] },
        ],
      }),
    );
    const ds = await loadCaptionDataset(dir);
    assert.equal(ds.name, 'mini');
    assert.deepEqual(
      ds.images.map((im) => [im.id, im.path, im.split, im.captions]),
      [
        ['a', join(dir, 'images', 'a.jpg'), 'train', ['A dog .', 'a brown dog']],
        ['b', join(dir, 'images', 'b.jpg'), 'restval', ['A cat']],
      ],
    );
  });

  test('Karpathy COCO layout: filepath folders beside the JSON, which can be given directly', async () => {
    const dir = await tempDir();
    await touch(join(dir, 'val2014', 'COCO_val2014_000000000042.jpg'));
    const json = join(dir, 'dataset_coco.json');
    await writeFile(
      json,
      JSON.stringify({
        dataset: 'coco',
        images: [
          {
            filepath: 'val2014',
            filename: 'COCO_val2014_000000000042.jpg',
            split: 'test',
            sentences: [{ raw: 'a clock' }],
          },
        ],
      }),
    );
    const ds = await loadCaptionDataset(json);
    assert.equal(ds.images[0]!.path, join(dir, 'val2014', 'COCO_val2014_000000000042.jpg'));
    assert.equal(ds.images[0]!.id, 'COCO_val2014_000000000042');
  });

  test("COCO's own annotations: captions grouped by image, split from the file name", async () => {
    const dir = await tempDir();
    await touch(join(dir, 'train2014', 'COCO_train2014_1.jpg'), join(dir, 'images', 'val2014', 'COCO_val2014_2.jpg'));
    await mkdir(join(dir, 'annotations'));
    await writeFile(
      join(dir, 'annotations', 'captions_train2014.json'),
      JSON.stringify({
        images: [{ id: 1, file_name: 'COCO_train2014_1.jpg' }],
        annotations: [
          { image_id: 1, caption: 'A bus. ' },
          { image_id: 1, caption: 'a red bus' },
        ],
      }),
    );
    await writeFile(
      join(dir, 'annotations', 'captions_val2014.json'),
      JSON.stringify({
        images: [{ id: 2, file_name: 'COCO_val2014_2.jpg' }],
        annotations: [{ image_id: 2, caption: 'a tree' }],
      }),
    );
    const ds = await loadCaptionDataset(dir);
    assert.equal(ds.name, 'coco');
    assert.deepEqual(
      ds.images.map((im) => [im.id, im.split, im.captions, im.path]),
      [
        ['COCO_train2014_1', 'train', ['A bus.', 'a red bus'], join(dir, 'train2014', 'COCO_train2014_1.jpg')],
        ['COCO_val2014_2', 'val', ['a tree'], join(dir, 'images', 'val2014', 'COCO_val2014_2.jpg')],
      ],
    );
  });

  test('bad input fails with the path and what is wrong', async () => {
    const dir = await tempDir();
    await assert.rejects(loadCaptionDataset(join(dir, 'nope')), {
      message: `${join(dir, 'nope')}: caption data set not found`,
    });
    await assert.rejects(loadCaptionDataset(dir), { message: new RegExp(`^${dir}: not a caption data set`) });

    const json = join(dir, 'dataset_bad.json');
    await writeFile(json, '{"images": [');
    await assert.rejects(loadCaptionDataset(dir), { message: new RegExp(`^${json}: invalid JSON`) });

    await writeFile(json, JSON.stringify({ images: [{ filename: 'a.jpg', split: 'dev', sentences: [{ raw: 'x' }] }] }));
    await assert.rejects(loadCaptionDataset(dir), {
      message: new RegExp(`^${json}: not the expected layout: images\\[0\\]\\.split`),
    });

    await writeFile(
      json,
      JSON.stringify({ images: [{ filename: 'a.jpg', split: 'train', sentences: [{ raw: 'x' }] }] }),
    );
    await assert.rejects(loadCaptionDataset(dir), {
      message: `${json}: image 'a.jpg' not found under ${join(dir, 'images')} or ${dir}`,
    });

    await touch(join(dir, 'images', 'a.jpg'));
    await writeFile(
      json,
      JSON.stringify({
        images: ['a.jpg', 'b.jpg', 'a.png'].map((filename) => ({
          filename,
          split: 'train',
          sentences: [{ raw: 'x' }],
        })),
      }),
    );
    await assert.rejects(loadCaptionDataset(dir), { message: `${json}: image id 'a' appears twice` });
    await writeFile(
      json,
      JSON.stringify({
        images: ['a.jpg', 'b.jpg', 'c.jpg'].map((filename) => ({
          filename,
          split: 'train',
          sentences: [{ raw: 'x' }],
        })),
      }),
    );
    await assert.rejects(loadCaptionDataset(dir), {
      message: `${json}: 2 of 3 image files are missing (${join(dir, 'images', 'b.jpg')}, ${join(dir, 'images', 'c.jpg')})`,
    });

    await writeFile(join(dir, 'dataset_other.json'), '{}');
    await assert.rejects(loadCaptionDataset(dir), {
      message: /more than one split file \(dataset_bad\.json, dataset_other\.json\)/,
    });
  });

  test(
    'Flickr8k from shared/data: 7900 images, 5 captions each, the official splits',
    { skip: flickr8kDir() ? false : 'Flickr8k not found (set FROST_DATA)' },
    async () => {
      const ds = await loadCaptionDataset(flickr8kDir()!);
      assert.equal(ds.name, 'flickr8k');
      const count = (split: string) => ds.images.filter((im) => im.split === split).length;
      assert.deepEqual(['train', 'val', 'test', 'restval'].map(count), [6000, 1000, 900, 0]);
      assert.ok(ds.images.every((im) => im.captions.length === 5));
    },
  );
});

describe('the caption vocabulary', () => {
  test('keeps training words seen at least 5 times, and counts what it drops as <unk>', async () => {
    const dir = await tempDir();
    const captions = (n: number, text: string) => Array.from({ length: n }, () => ({ raw: text }));
    const images = [
      { filename: 'a.jpg', split: 'train', sentences: [...captions(5, 'A dog.'), ...captions(4, 'a cat')] },
      { filename: 'b.jpg', split: 'test', sentences: captions(10, 'a zebra') },
    ];
    await touch(join(dir, 'images', 'a.jpg'), join(dir, 'images', 'b.jpg'));
    await writeFile(join(dir, 'dataset_v.json'), JSON.stringify({ images }));
    const ds = await loadCaptionDataset(dir);
    const vocab = buildCaptionVocabulary(ds);
    assert.deepEqual(vocab.tokens.slice(4), ['a', 'dog']);
    assert.equal(vocab.count('a'), 9);
    assert.equal(vocab.count('<unk>'), 4, "the four 'cat's");
    assert.ok(!vocab.has('zebra'), 'test captions do not count');
    assert.deepEqual(buildCaptionVocabulary(ds, { minFreq: 4 }).tokens.slice(4), ['a', 'dog', 'cat']);
    assert.deepEqual(
      [...captionWordCounts(ds)],
      [
        ['a', 9],
        ['dog', 5],
        ['cat', 4],
      ],
    );
  });
});

describe('the toy caption set', () => {
  test('is deterministic from its seed, and its pictures show what the captions say', async () => {
    const [a, b, c] = [await tempDir(), await tempDir(), await tempDir()];
    const first = await makeToyCaptions(a, { seed: 7, count: 24, size: 48 });
    await makeToyCaptions(b, { seed: 7, count: 24, size: 48 });
    await makeToyCaptions(c, { seed: 8, count: 24, size: 48 });
    assert.equal(await readFile(first.jsonPath, 'utf8'), await readFile(join(b, 'dataset_toy.json'), 'utf8'));
    assert.deepEqual(
      await readFile(join(a, 'images', 'toy_0005.png')),
      await readFile(join(b, 'images', 'toy_0005.png')),
    );
    assert.notEqual(await readFile(first.jsonPath, 'utf8'), await readFile(join(c, 'dataset_toy.json'), 'utf8'));

    const ds = await loadCaptionDataset(a);
    assert.equal(ds.images.length, 24);
    assert.deepEqual(new Set(ds.images.map((im) => im.split)), new Set(['train', 'val', 'test']));
    const vocab = buildCaptionVocabulary(ds, { minFreq: 1 });
    assert.ok(vocab.size < 40, `a small vocabulary (${vocab.size})`);
    for (const [i, im] of first.images.entries()) {
      assert.ok(
        ds.images[i]!.captions.every(
          (cap) => cap.includes(im.colour) && cap.includes(im.shape) && cap.includes(im.background),
        ),
      );
      assert.notEqual(im.colour, im.background);
      // The background covers most pixels and the shape the next most.
      const { rgba } = await decodeImage(join(a, 'images', im.filename));
      const counts = new Map<string, number>();
      for (let p = 0; p < rgba.length; p += 4) {
        const key = `#${[0, 1, 2].map((k) => rgba[p + k]!.toString(16).padStart(2, '0')).join('')}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      const ranked = [...counts].sort((x, y) => y[1] - x[1]).map(([k]) => k);
      assert.deepEqual(
        ranked.slice(0, 2),
        [TOY_COLOURS[im.background], TOY_COLOURS[im.colour]],
        `${im.filename}: ${im.colour} ${im.shape} on ${im.background}`,
      );
    }
  });
});

describe('the image cache', () => {
  const spec: ImageSpec = { ...DEFAULT_IMAGE_SPEC, size: 32 };

  test('holds each image cropped, resized and flattened, and rebuilds only when the images change', async () => {
    const dir = await tempDir();
    await makeToyCaptions(dir, { seed: 3, count: 12, size: 48 });
    // One translucent, non-square image, so cropping and flattening are exercised too.
    const translucent = join(dir, 'images', 'toy_0001.png');
    await sharp({ create: { width: 60, height: 40, channels: 4, background: { r: 200, g: 30, b: 30, alpha: 0.4 } } })
      .png()
      .toFile(translucent);
    const ds = await loadCaptionDataset(dir);
    const cacheDir = join(dir, 'cache');
    let decoded = 0;
    const onProgress = () => void decoded++;

    const cache = await loadImageCache(ds, { cacheDir, spec, onProgress });
    assert.equal(decoded, 12);
    assert.deepEqual([cache.size, cache.count, cache.pixels.length], [32, 12, 12 * 32 * 32 * 3]);
    assert.equal(cache.indexOf('toy_0001'), 1);
    assert.equal(cache.indexOf('nope'), -1);
    for (const row of [0, 1]) {
      const { rgba, width, height } = await decodeImage(ds.images[row]!.path);
      const expected = flattenAlpha(centreCropResize(rgba, width, height, 32), spec);
      assert.deepEqual(cache.pixels.subarray(row * 3072, (row + 1) * 3072), expected, `row ${row}`);
    }
    assert.deepEqual(readdirSync(cacheDir).sort(), ['32.json', '32.u8'], 'no temporary files are left');

    // Current: read back, nothing decoded.
    decoded = 0;
    const again = await loadImageCache(ds, { cacheDir, spec, onProgress });
    assert.equal(decoded, 0);
    assert.deepEqual(again.pixels, cache.pixels);

    // A changed image file (new content and mtime) rebuilds it.
    await sharp({ create: { width: 48, height: 48, channels: 3, background: '#00ff00' } })
      .png()
      .toFile(ds.images[0]!.path);
    await utimes(ds.images[0]!.path, new Date(), new Date(Date.now() + 5000));
    const changed = await loadImageCache(ds, { cacheDir, spec, onProgress });
    assert.equal(decoded, 12);
    assert.deepEqual(Array.from(changed.pixels.subarray(0, 3)), [0, 255, 0]);

    // A different image list rebuilds it.
    decoded = 0;
    const fewer: CaptionDataset = { ...ds, images: ds.images.slice(2) };
    const smaller = await loadImageCache(fewer, { cacheDir, spec, onProgress });
    assert.deepEqual([decoded, smaller.count, smaller.indexOf('toy_0002')], [10, 10, 0]);

    // A damaged data file rebuilds it.
    await writeFile(join(cacheDir, '32.u8'), Buffer.alloc(10));
    decoded = 0;
    await loadImageCache(fewer, { cacheDir, spec, onProgress });
    assert.equal(decoded, 10);
  });

  test('normaliseBatch gives [B, 3, size, size] in the rows asked for', async () => {
    const dir = await tempDir();
    await makeToyCaptions(dir, { seed: 4, count: 6, size: 32 });
    const cache = await loadImageCache(await loadCaptionDataset(dir), { cacheDir: join(dir, 'cache'), spec });
    const batch = normaliseBatch(cache, [5, 0], spec);
    assert.equal(batch.length, 2 * 3 * 32 * 32);
    assert.deepEqual(batch.subarray(0, 3072), rgbToNormalisedCHW(cache.pixels.subarray(5 * 3072, 6 * 3072), 32, spec));
    assert.deepEqual(batch.subarray(3072), rgbToNormalisedCHW(cache.pixels.subarray(0, 3072), 32, spec));
    assert.throws(() => normaliseBatch(cache, [6], spec), /row 6 is outside 0\.\.5/);
    assert.throws(
      () => normaliseBatch(cache, [0], DEFAULT_IMAGE_SPEC),
      /the cache holds 32px images, the spec asks for 128px/,
    );
  });

  test(
    'Flickr8k images at 128 px are cached as decoded',
    { skip: flickr8kDir() ? false : 'Flickr8k not found (set FROST_DATA)' },
    async () => {
      const full = await loadCaptionDataset(flickr8kDir()!);
      const some: CaptionDataset = { ...full, images: full.images.slice(0, 40) };
      const cache = await loadImageCache(some, { cacheDir: join(await tempDir(), 'cache') });
      const { rgba } = await decodeImage(some.images[39]!.path);
      assert.deepEqual(
        cache.pixels.subarray(39 * 49152),
        flattenAlpha(rgba, DEFAULT_IMAGE_SPEC),
        '128×128 JPEGs need no resampling',
      );
    },
  );
});
