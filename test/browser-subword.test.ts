/**
 * A subword model in the web page (headless Chromium): the page fetches the card's `subword.model` from the
 * server, tokenises and detokenises with the same core/subword code, and its translations equal the server's
 * word for word, for text in any script. Skipped, with the reason, where Chromium is missing.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { webClient } from '../clients/web/build/web-client.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { browserSkipReason, launchBrowser, type TestBrowser, settle } from './helpers/browser.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

const MODEL = 'tiny-bpe';
const BEAM = 3;
const SENTENCES = ['The Red Dog sits on a big House .', 'a small cat 😀 漢字 and שלום', 'Zebra e\u0301 \u0000 NUL'];

describe('a subword model in the web page (Chromium)', { skip: browserSkipReason(), timeout: 180_000 }, () => {
  let root: string;
  let server: RunningServer;
  let browser: TestBrowser;
  let page: Page;
  const requested: string[] = [];

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'frost-web-subword-'));
    await writeTinyModelDir(join(root, 'models', MODEL), { name: MODEL, subword: true });
    server = await startServer({
      modelsDir: join(root, 'models'),
      port: 0,
      host: '127.0.0.1',
      intraOpNumThreads: 1,
      web: webClient(),
      log: () => {},
    });
    browser = await launchBrowser();
    browser.context.on('request', (r) => requested.push(r.url()));
    page = await browser.context.newPage();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  async function serverTranslation(text: string): Promise<string> {
    const res = await fetch(`${server.url}/v1/translate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, text, beam: BEAM }),
    });
    assert.equal(res.status, 200);
    return ((await res.json()) as { translations: { text: string }[] }).translations[0]!.text;
  }

  test(`translates in the page exactly as POST /v1/translate does, with beam ${BEAM}`, async () => {
    await page.goto(server.url);
    await page.waitForSelector('body[data-state="idle"]');
    await page.getByLabel('Model on this server').selectOption(MODEL);
    await page.getByLabel('Run on').selectOption('wasm');
    await page.getByRole('button', { name: 'Load model' }).click();
    await settle(page);
    assert.ok(
      requested.some((u) => u.endsWith(`/v1/models/${MODEL}/files/subword.model`)),
      'the page fetched the subword model',
    );

    await page.getByLabel('Text, one sentence per line').fill(SENTENCES.join('\n'));
    await page.getByLabel('Beam width').fill(String(BEAM));
    await page.getByRole('button', { name: 'Translate' }).click();
    await settle(page);
    const rows = page.locator('#results tbody tr');
    assert.equal(await rows.count(), SENTENCES.length);
    for (let i = 0; i < SENTENCES.length; i++) {
      const inBrowser = await rows.nth(i).locator('td.browser-text').getAttribute('data-text');
      const expected = await serverTranslation(SENTENCES[i]!);
      assert.equal(inBrowser, expected, `'${SENTENCES[i]}': in the browser vs POST /v1/translate`);
      assert.ok(!expected.includes('<unk>') && !expected.includes('\u2581'), expected);
    }
  });
});
