/**
 * The web client in a real browser (headless Chromium through playwright-core): it loads a model
 * from `frost serve`, translates in the page with onnxruntime-web, and must agree with the server's
 * onnxruntime-node answer word for word. Skipped, with the reason, where Chromium is missing.
 *
 * FROST_SCREENSHOT=1 also writes the screenshot to docs/screenshot-web.png.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  browserSkipReason,
  loadModelInPage,
  openPage,
  servedPageFixture,
  settle,
  translateInPage,
} from './helpers/browser.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';
import { serverTranslation } from './helpers/translate-request.ts';

/** Sentences in the tiny model's vocabulary (plus one unknown word), all with non-empty outputs at beam 4. */
const SENTENCES = ['The red dog sits on a big house .', 'a small cat and a big dog', 'the blue ball and the zebra'];
const BEAM = 4;
const MODEL = 'tiny-en-de';

describe('web client in Chromium', { skip: browserSkipReason(), timeout: 180_000 }, () => {
  const web = servedPageFixture('frost-web-page-', (root) => writeTinyModelDir(join(root, 'models', 'tiny')));

  async function loadModel(): Promise<void> {
    await openPage(web.page, web.serverUrl);
    await loadModelInPage(web.page, MODEL);
  }

  test(`translates in the page with beam ${BEAM}, exactly as POST /v1/translate does`, async () => {
    const { page, serverUrl, root } = web;
    await loadModel();
    // Cross-origin isolation is what gives ORT its threads.
    const { isolated, cores } = await page.evaluate(() => ({
      isolated: crossOriginIsolated,
      cores: navigator.hardwareConcurrency,
    }));
    assert.equal(isolated, true, 'the page is cross-origin isolated');
    const threads = Math.max(1, Math.min(4, cores));
    const backend = (await page.textContent('#models tbody tr[aria-current="true"] td.backend')) ?? '';
    assert.ok(backend.startsWith(`wasm, ${threads} thread${threads === 1 ? '' : 's'}`), backend);

    // The card's figures are on show.
    const row = page.locator('#models tbody tr').first();
    assert.equal(await row.locator('td.head').textContent(), 'learned');
    assert.match((await row.locator('td.learnable').textContent()) ?? '', /^\d[\d,]*$/);
    assert.match((await row.locator('td.download').textContent()) ?? '', /kB/);

    const rows = await translateInPage(page, SENTENCES, BEAM, true);
    for (const [i, row] of rows.entries()) {
      const expected = await serverTranslation(serverUrl, MODEL, SENTENCES[i]!, BEAM);
      assert.ok(expected.length > 0, `'${SENTENCES[i]}' has a non-empty translation`);
      assert.equal(row.browser, expected, `'${SENTENCES[i]}': in the browser vs POST /v1/translate`);
      assert.equal(row.server, expected, `'${SENTENCES[i]}': the page's own server column`);
      assert.match(row.ms ?? '', /ms$/);
    }

    const shot = join(root, 'screenshot-web.png');
    await page.screenshot({ path: shot, fullPage: true });
    if (process.env.FROST_SCREENSHOT === '1') {
      await mkdir('docs', { recursive: true });
      await copyFile(shot, join('docs', 'screenshot-web.png'));
    }
  });

  test('a reload takes the runtime and the model from Cache Storage', async () => {
    const { page, requested } = web;
    const before = requested.length;
    await loadModel();
    const again = requested.slice(before).map((u) => new URL(u).pathname);
    assert.ok(!again.some((p) => p.endsWith('.wasm') || p.endsWith('.onnx')), `downloaded again: ${again.join(', ')}`);
    assert.match((await page.textContent('#models tbody tr td.download')) ?? '', /from cache/);
  });

  test('loads a model from a folder URL, and names the URL when there is no model there', async () => {
    const { page, serverUrl } = web;
    const urlField = page.getByLabel('or a model folder URL');
    await urlField.fill(`${serverUrl}/nowhere`);
    await page.getByRole('button', { name: 'Load model' }).click();
    await page.waitForSelector('body[data-state="error"]');
    assert.match((await page.textContent('#status')) ?? '', /\/nowhere\/model-card\.json: HTTP 404/);

    // No trailing slash: the page adds it, so the graphs resolve inside the folder.
    await urlField.fill(`${serverUrl}/v1/models/${MODEL}/files`);
    await page.getByRole('button', { name: 'Load model' }).click();
    await settle(page);
    assert.match((await page.textContent('#status')) ?? '', new RegExp(`${MODEL} is loaded`));
  });

  test('makes no request outside 127.0.0.1', () => {
    const { requested } = web;
    assert.ok(requested.length > 0, 'requests were recorded');
    const outside = requested.filter((u) => {
      const url = new URL(u);
      // data: and blob: URLs are the page's own memory, not the network.
      return url.protocol !== 'data:' && url.protocol !== 'blob:' && url.hostname !== '127.0.0.1';
    });
    assert.deepEqual(outside, []);
  });
});
