/**
 * The web page captions images in the browser (issue #6): headless Chromium loads a real exported
 * toy caption model from the server, the user picks (or drops) images, and the page decodes,
 * preprocesses and captions them with onnxruntime-web. Each caption must equal, word for word,
 * the one onnxruntime-node gives for the same file through `decodeImage` + `preprocessRgba` +
 * `CaptionRuntime` with the same beam, which is what `frost caption` and the server run.
 *
 * The page is served by the app (serve/app.ts) over in-process runtimes, as embedders mount it:
 * only the page and the model files are needed, not the server's decode threads.
 * Skipped, with the reason, where Chromium is missing.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { decodeImage } from '../core/image/decode-node.ts';
import { preprocessRgba } from '../core/image/preprocess.ts';
import { loadCaptionModelDir, loadModelDir } from '../core/runtime/load-node.ts';
import { ModelRegistry } from '../serve/model-registry.ts';
import { browserSkipReason, loadModelInPage, openPage, serveAppPage, settle, type AppPage } from './helpers/browser.ts';
import { TOY_CAPTION_MODEL_NAME, toyCaptionModel, type ToyCaptionModel } from './helpers/toy-caption-model.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

/** Not the runtime's default of 10, so the test shows the page passes on the width it is given. */
const BEAM = 3;
const TRANSLATION_MODEL = 'tiny-en-de';

describe('captioning in the web page (Chromium)', { skip: browserSkipReason(), timeout: 300_000 }, () => {
  let root: string;
  let toy: ToyCaptionModel;
  /** Held-out toy images showing different things, and their onnxruntime-node captions at {@link BEAM}. */
  let images: string[];
  let expected: string[];
  let registry: ModelRegistry;
  let web: AppPage;
  let url: string;
  let page: Page;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'frost-web-caption-'));
    toy = await toyCaptionModel();
    // One image per distinct reference caption, so a page that ignored the pixels would be caught.
    const byReference = new Map(toy.testImages.map((im) => [im.captions[0], im.path]));
    images = [...byReference.values()].slice(0, 3);

    const captioner = await loadCaptionModelDir(toy.modelDir);
    try {
      expected = [];
      for (const path of images) {
        const { rgba, width, height } = await decodeImage(path);
        // One image per call, as the page captions them.
        const [caption] = await captioner.caption([preprocessRgba(rgba, width, height, captioner.imageSpec)], {
          beam: BEAM,
        });
        expected.push(caption.text);
      }
    } finally {
      await captioner.release();
    }

    const tinyDir = await writeTinyModelDir(join(root, 'tiny'));
    registry = new ModelRegistry(
      [
        {
          name: TOY_CAPTION_MODEL_NAME,
          dir: toy.modelDir,
          runtime: await loadModelDir(toy.modelDir, { intraOpNumThreads: 1 }),
        },
        { name: TRANSLATION_MODEL, dir: tinyDir, runtime: await loadModelDir(tinyDir, { intraOpNumThreads: 1 }) },
      ],
      TOY_CAPTION_MODEL_NAME,
    );
    web = await serveAppPage({ registry });
    ({ url, page } = web);
  });

  after(async () => {
    await web?.close();
    await registry?.close();
    if (root) await rm(root, { recursive: true, force: true });
    assert.deepEqual(web?.serverErrors ?? [], [], 'the server logged no internal error');
  });

  /** Runs `action`, then waits until the page has `rows` captions in all and is ready again. */
  async function captionAndSettle(action: () => Promise<void>, rows: number): Promise<void> {
    await action();
    await page.waitForFunction(
      (n) =>
        document.body.dataset.state === 'error' ||
        (document.body.dataset.state === 'ready' && document.querySelectorAll('#captions tbody tr').length === n),
      rows,
      { timeout: 120_000 },
    );
    await settle(page);
  }

  const captionRows = () => page.locator('#captions tbody tr');

  test('a caption model shows the caption form instead of the translation form', async () => {
    assert.ok(
      new Set(expected).size > 1,
      `the toy model gives these different images one caption: ${expected.join(' | ')}`,
    );
    await openPage(page, url);
    await loadModelInPage(page, TOY_CAPTION_MODEL_NAME);
    assert.equal(await page.isVisible('#caption-section'), true);
    assert.equal(await page.isVisible('#translate-section'), false);
    const row = page.locator('#models tbody tr[aria-current="true"]');
    assert.equal(await row.getAttribute('data-model'), TOY_CAPTION_MODEL_NAME);
    assert.match((await row.locator('td').nth(1).textContent()) ?? '', /^image → en32² pixels \/ \d+ words$/);
  });

  test(`captions picked images in the page with beam ${BEAM}, exactly as onnxruntime-node does`, async () => {
    await page.getByLabel('Beam search width').fill(String(BEAM));
    await captionAndSettle(() => page.getByLabel(/^Images/).setInputFiles(images), images.length);
    assert.equal(await page.textContent('#status'), `Captioned ${images.length} images with beam ${BEAM}.`);
    for (let i = 0; i < images.length; i++) {
      const row = captionRows().nth(i);
      assert.equal(
        await row.locator('td.caption-text').getAttribute('data-text'),
        expected[i],
        `${basename(images[i])}: in the browser vs onnxruntime-node`,
      );
      assert.equal(await row.locator('td.image .sub').textContent(), basename(images[i]));
      // The thumbnail is the picked file itself, decoded by the browser (the toy PNGs are 64²).
      const thumb = row.locator('img.thumb');
      await thumb.evaluate((img: HTMLImageElement) => img.decode());
      assert.equal(await thumb.evaluate((img: HTMLImageElement) => img.naturalWidth), 64);
      assert.match((await row.locator('td.caption-ms').textContent()) ?? '', /ms$/);
    }
    // The models table counts the captioned images.
    assert.equal(
      await page.textContent('#models tbody tr[aria-current="true"] td.latency .sub'),
      `${images.length} images`,
    );
  });

  test('captions an image dropped on the section', async () => {
    const bytes = [...(await readFile(images[1]))];
    const name = basename(images[1]);
    const dataTransfer = await page.evaluateHandle(
      ({ bytes, name }) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], name, { type: 'image/png' }));
        return dt;
      },
      { bytes, name },
    );
    await captionAndSettle(() => page.dispatchEvent('#drop-zone', 'drop', { dataTransfer }), images.length + 1);
    const last = captionRows().last();
    assert.equal(await last.locator('td.caption-text').getAttribute('data-text'), expected[1]);
    assert.equal(await last.locator('td.image .sub').textContent(), name);
  });

  test('a file that is not an image is refused, naming the file', async () => {
    const rows = await captionRows().count();
    await page
      .getByLabel(/^Images/)
      .setInputFiles({ name: 'scan.jpg', mimeType: 'image/jpeg', buffer: Buffer.from('%PDF-1.4\n%%EOF\n') });
    await page.waitForSelector('body[data-state="error"]');
    assert.equal(
      await page.textContent('#status'),
      'scan.jpg: not an image: the bytes are a PDF document (only JPEG and PNG are accepted)',
    );
    assert.equal(await captionRows().count(), rows, 'no row for the refused file');
    // The page stays usable: the next good image is captioned.
    await captionAndSettle(() => page.getByLabel(/^Images/).setInputFiles(images[0]), rows + 1);
    assert.equal(await captionRows().last().locator('td.caption-text').getAttribute('data-text'), expected[0]);
  });

  test('loading a translation model brings the translation form back', async () => {
    await loadModelInPage(page, TRANSLATION_MODEL);
    assert.equal(await page.isVisible('#translate-section'), true);
    assert.equal(await page.isVisible('#caption-section'), false);
    assert.equal(await page.getByRole('button', { name: 'Translate' }).isEnabled(), true);
  });
});
