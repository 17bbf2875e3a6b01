/**
 * The web page completes text with a language model (issue #17): headless Chromium loads a tiny
 * exported LM from the server, and its seeded completion, run by LmRuntime on onnxruntime-web, must
 * equal the one onnxruntime-node gives (what `POST /v1/complete` runs) for the same prompt, seed and
 * options. Skipped, with the reason, where Chromium is missing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { loadLmModelDir } from '../core/runtime/load-lm-node.ts';
import { ModelRegistry } from '../serve/model-registry.ts';
import { browserSkipReason, loadModelInPage, openPage, serveAppPage, type AppPage } from './helpers/browser.ts';
import { cachedLmModel, SMALL_LM } from './helpers/lm-fixtures.ts';

describe('text completion in the web page (Chromium)', { skip: browserSkipReason(), timeout: 300_000 }, () => {
  let modelDir: string;
  let web: AppPage;
  let url: string;
  let page: Page;

  before(async () => {
    // Served from the shared folder as it is: the server only reads it.
    const lm = await cachedLmModel(SMALL_LM);
    modelDir = lm.modelDir;
    web = await serveAppPage({ registry: await ModelRegistry.load(lm.modelsDir, { intraOpNumThreads: 1 }) });
    ({ url, page } = web);
  });

  after(async () => {
    await web?.close();
    assert.deepEqual(web?.serverErrors ?? [], [], 'the server logged no internal error');
  });

  test('a seeded completion in the page equals onnxruntime-node', async () => {
    const runtime = await loadLmModelDir(modelDir, { intraOpNumThreads: 1 });
    const options = { maxNewTokens: 12, temperature: 0.8, topP: 1, seed: 7 };
    const expected = await runtime.complete('w3 w7', options);
    assert.ok(expected.tokens.length > 0, 'the reference completion is not empty');

    await openPage(page, url);
    await loadModelInPage(page, 'lm-tiny');
    assert.equal(await page.isVisible('#complete-section'), true);
    assert.equal(await page.isVisible('#translate-section'), false);

    await page.getByLabel('The beginning of a text').fill('w3 w7');
    await page.getByLabel('Tokens to add').fill('12');
    await page.getByLabel('Temperature (0: greedy)').fill('0.8');
    await page.getByLabel('Seed').fill('7');
    await page.getByRole('button', { name: 'Complete' }).click();
    await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, {
      timeout: 120_000,
    });
    assert.equal(await page.getAttribute('body', 'data-state'), 'ready', (await page.textContent('#status')) ?? '');
    assert.equal(await page.getAttribute('#completion', 'data-text'), expected.text);
    assert.equal(await page.getAttribute('#completion', 'data-finish'), expected.finishReason);
  });
});
