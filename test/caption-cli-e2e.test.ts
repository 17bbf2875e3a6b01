/**
 * `frost caption` end to end: the real command on a real exported toy caption model, run in this
 * process as the CLI registers it (helpers/frost-in-process.ts); a refusal goes through bin/frost.js
 * in a child process, for the exit status and stderr the shell sees. Its captions must equal what
 * the library gives for the same files: `CaptionRuntime.caption` on
 * `preprocessRgba(decodeImage(file))` with the card's image spec, the same images in one batch, and
 * the same search settings. Argument handling and refusals without a model are in
 * caption-cli.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { decodeImage } from '../core/image/decode-node.ts';
import { preprocessRgba } from '../core/image/preprocess.ts';
import type { Caption, CaptionOptions } from '../core/runtime/caption.ts';
import { loadCaptionModelDir } from '../core/runtime/load-node.ts';
import { FROST_BIN } from './helpers/frost-cli.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';
import { toyCaptionModel, type ToyCaptionModel } from './helpers/toy-caption-model.ts';

/** One ORT thread on both sides: the comparison is exact, and the loaded machine is spared. */
const THREADS = 1;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `frost caption ...` in this process; a non-zero exit is returned, not thrown. */
function frostCaption(args: string[]): Promise<Run> {
  return frostInProcess(['caption', ...args]);
}

/** Runs bin/frost.js caption ... in a child process and collects its output. */
function frostCaptionChild(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [FROST_BIN, 'caption', ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') reject(err);
      else resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
    });
  });
}

describe('frost caption on an exported toy caption model', { timeout: 600_000 }, () => {
  let dir: string;
  let toy: ToyCaptionModel;
  /** Two held-out PNGs with different references, and a JPEG made from a third (see before). */
  let images: string[];

  /** What the library says for `paths`, captioned together as the command does. */
  async function libraryCaptions(paths: string[], opts: CaptionOptions = {}): Promise<Caption[]> {
    const runtime = await loadCaptionModelDir(toy.modelDir, { intraOpNumThreads: THREADS });
    try {
      const pixels: Float32Array[] = [];
      for (const path of paths) {
        const { rgba, width, height } = await decodeImage(path);
        pixels.push(preprocessRgba(rgba, width, height, runtime.imageSpec));
      }
      return await runtime.caption(pixels, opts);
    } finally {
      await runtime.release();
    }
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'frost-caption-cli-e2e-'));
    toy = await toyCaptionModel();
    const byReference = new Map(toy.testImages.map((im) => [im.captions[0], im.path]));
    const [a, b, c] = [...byReference.values()];
    // A landscape JPEG at another size: the command must crop, resize and decode JPEG as the library does.
    const jpeg = join(dir, 'landscape.jpg');
    await sharp(c).resize(96, 72, { fit: 'fill' }).jpeg({ quality: 90 }).toFile(jpeg);
    images = [a, b, jpeg];
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('one image: prints its caption alone, with the default beam and length', async () => {
    const [expected] = await libraryCaptions([images[0]]);
    const run = await frostCaption([toy.modelDir, images[0], '--threads', String(THREADS)]);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(expected.text.length > 0, 'the toy model captions the image');
    assert.equal(run.stdout, `${expected.text}\n`);
  });

  test('several images: one `path<TAB>caption` line each, in order, at --beam 3', async () => {
    const expected = await libraryCaptions(images, { beam: 3 });
    assert.ok(
      new Set(expected.map((c) => c.text)).size > 1,
      `different images got one caption: ${expected.map((c) => c.text).join(' | ')}`,
    );
    const run = await frostCaption([toy.modelDir, ...images, '--beam', '3', '--threads', String(THREADS)]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.stdout.split('\n'), [...images.map((path, i) => `${path}\t${expected[i].text}`), '']);
  });

  test('--json: one object per image with its caption, tokens and score; --max-len caps the words', async () => {
    const maxLength = 4;
    const expected = await libraryCaptions(images, { beam: 2, maxLength });
    const run = await frostCaption([
      toy.modelDir,
      ...images,
      '--json',
      '--beam',
      '2',
      '--max-len',
      String(maxLength),
      '--threads',
      String(THREADS),
    ]);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { image: string; caption: string; tokens: string[]; score: number });
    assert.equal(lines.length, images.length);
    lines.forEach((line, i) => {
      assert.deepEqual(Object.keys(line), ['image', 'caption', 'tokens', 'score']);
      assert.equal(line.image, images[i]);
      assert.equal(line.caption, expected[i].text);
      assert.deepEqual(line.tokens, expected[i].tokens);
      assert.equal(line.caption, line.tokens.join(' '));
      assert.ok(line.tokens.length <= maxLength, `${line.tokens.length} words with --max-len ${maxLength}`);
      // Another session of the same runtime: the score may differ only by float rounding.
      assert.ok(
        Math.abs(line.score - expected[i].score) <= 1e-5 * Math.max(1, Math.abs(expected[i].score)),
        `score ${line.score} vs ${expected[i].score}`,
      );
    });
  });

  test('a translation model is refused, naming its card', async () => {
    const tiny = await writeTinyModelDir(join(dir, 'tiny'));
    const run = await frostCaptionChild([tiny, images[0]]);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      `frost: ${join(tiny, 'model-card.json')}: 'tiny-en-de' is a translation model, not a caption model\n`,
    );
  });
});
