/**
 * Headless Chromium for browser tests, driven by playwright-core, and what those tests share: the
 * server with the page, loading a model and translating through the page's UI, and onnxruntime-web's
 * API for running a graph in the page's context (the server's answer to compare with is in
 * translate-request.ts). The browser is the system's (Debian's `chromium` package), never a
 * downloaded one; tests skip, saying why, where it is missing.
 */
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { ort } from '../../core/runtime/ort-node.ts';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { ortDistDir } from '../../clients/web/build/ort-files.ts';
import { webClient } from '../../clients/web/build/web-client.ts';
import { createApp, type AppOptions } from '../../serve/app.ts';
import { startServer, type RunningServer } from '../../serve/server.ts';

/** The Chromium binary; FROST_CHROMIUM overrides it. */
export const CHROMIUM_PATH = process.env.FROST_CHROMIUM ?? '/usr/bin/chromium';

/** Headless, and quiet: no GPU, no QUIC, and none of Chromium's own background traffic (updates, sync). */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Why browser tests cannot run here, or undefined when they can (for `describe(..., { skip })`). */
export function browserSkipReason(): string | false {
  if (!existsSync(CHROMIUM_PATH)) {
    return `no Chromium at ${CHROMIUM_PATH} (install the Debian package 'chromium', or set FROST_CHROMIUM)`;
  }
  return false;
}

/** A running browser with a fresh profile; `close` also deletes the profile. */
export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Starts Chromium with a fresh user-data-dir, so no cache or storage leaks from one run into the next. */
export async function launchBrowser(): Promise<TestBrowser> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'frost-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: [...CHROMIUM_ARGS],
      viewport: { width: 1200, height: 900 },
    });
    return {
      context,
      async close() {
        await context.close().catch(() => undefined);
        await rm(userDataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(userDataDir, { recursive: true, force: true });
    throw err;
  }
}

/** Waits until the page has finished what it was doing; fails with the page's own message on an error. */
export async function settle(page: Page, timeout = 120_000): Promise<void> {
  await page.waitForSelector('body[data-state="ready"], body[data-state="error"]', { timeout });
  if ((await page.getAttribute('body', 'data-state')) === 'error')
    assert.fail(`the page reports: ${await page.textContent('#status')}`);
}

/** `frost serve` with the web page, and a fresh Chromium with one page open on nothing yet. */
export interface ServedPage {
  server: RunningServer;
  browser: TestBrowser;
  page: Page;
  /** Every URL the page (and its workers) requested, in order. */
  requested: string[];
  close(): Promise<void>;
}

/**
 * Serves the models in `modelsDir` (one decode thread each, quiet) with the web page, and opens a
 * page in a fresh Chromium; `close` stops both.
 */
export async function servePage(modelsDir: string): Promise<ServedPage> {
  const server = await startServer({
    modelsDir,
    port: 0,
    host: '127.0.0.1',
    intraOpNumThreads: 1,
    web: webClient(),
    log: () => {},
  });
  let browser: TestBrowser;
  try {
    browser = await launchBrowser();
  } catch (err) {
    await server.close();
    throw err;
  }
  const requested: string[] = [];
  // Registered before the page opens, so its first requests are recorded too.
  browser.context.on('request', (r) => requested.push(r.url()));
  const page = await browser.context.newPage();
  return {
    server,
    browser,
    page,
    requested,
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

/** A web app and a fresh Chromium with one page open on nothing yet; `close` stops both. */
export interface AppPage {
  /** The app's root URL, with its trailing slash. */
  url: string;
  browser: TestBrowser;
  page: Page;
  /** What the app passed to `onInternalError`: a test expects none. */
  serverErrors: unknown[];
  close(): Promise<void>;
}

/**
 * Serves `createApp(options)` with the web page on 127.0.0.1 (a free port), for tests that build its
 * registry or language models themselves, and opens a page in a fresh Chromium.
 */
export async function serveAppPage(options: Omit<AppOptions, 'web' | 'onInternalError'>): Promise<AppPage> {
  const serverErrors: unknown[] = [];
  const server = createApp({ ...options, web: webClient(), onInternalError: (err) => serverErrors.push(err) }).listen(
    0,
    '127.0.0.1',
  );
  await new Promise((resolve) => server.once('listening', resolve));
  const closeServer = () => new Promise((resolve) => server.close(resolve));
  let browser: TestBrowser;
  try {
    browser = await launchBrowser();
  } catch (err) {
    await closeServer();
    throw err;
  }
  const page = await browser.context.newPage();
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    browser,
    page,
    serverErrors,
    async close() {
      await browser.close();
      await closeServer();
    },
  };
}

/** What {@link servedPageFixture} sets up; its fields are filled in by the describe's `before`. */
export interface PageFixture {
  /** The temporary directory; the served models are in `root/models`. */
  root: string;
  served: ServedPage;
  page: Page;
  serverUrl: string;
  /** Every URL the page (and its workers) requested, in order. */
  requested: string[];
  /** onnxruntime-web's API served to the page (see {@link routeOrtApi}); empty unless `ortApi` is set. */
  apiUrl: string;
}

/**
 * Registers the calling describe's `before` and `after`: a fresh temporary directory `prefix…`,
 * `writeModels(root)` to put the models into `root/models`, then {@link servePage} on them (and, with
 * `ortApi`, onnxruntime-web's API routed to the page); `after` stops both and deletes the directory.
 * Call it inside the describe, and read the returned fields in its tests.
 */
export function servedPageFixture(
  prefix: string,
  writeModels: (root: string) => Promise<unknown>,
  options: { ortApi?: boolean } = {},
): PageFixture {
  const fixture = { apiUrl: '' } as PageFixture;
  before(async () => {
    fixture.root = await mkdtemp(join(tmpdir(), prefix));
    await writeModels(fixture.root);
    fixture.served = await servePage(join(fixture.root, 'models'));
    fixture.page = fixture.served.page;
    fixture.requested = fixture.served.requested;
    fixture.serverUrl = fixture.served.server.url;
    if (options.ortApi) fixture.apiUrl = await routeOrtApi(fixture.page, fixture.serverUrl);
  });
  after(async () => {
    await fixture.served?.close();
    if (fixture.root) await rm(fixture.root, { recursive: true, force: true });
  });
  return fixture;
}

/** Opens the page at `url` and waits until it has read the server's model list. */
export async function openPage(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector('body[data-state="idle"]');
}

/** Loads the server's model `name` through the page's UI, on the wasm backend. */
export async function loadModelInPage(page: Page, name: string): Promise<void> {
  await page.getByLabel('Model on this server').selectOption(name);
  await page.getByLabel('Run on').selectOption('wasm');
  await page.getByRole('button', { name: 'Load model' }).click();
  await settle(page);
}

/** One row of the page's translations: the browser's text, the server's (when compared) and the time. */
export interface PageTranslation {
  browser: string | null;
  server: string | null;
  ms: string | null;
}

/**
 * Translates `sentences` in the page with beam width `beam` (with the page's own server column when
 * `compare`), and reads back one row per sentence.
 */
export async function translateInPage(
  page: Page,
  sentences: readonly string[],
  beam: number,
  compare: boolean,
): Promise<PageTranslation[]> {
  await page.getByLabel('Text, one sentence per line').fill(sentences.join('\n'));
  await page.getByLabel('Beam width').fill(String(beam));
  if (compare) await page.getByRole('switch', { name: /Compare with the server/ }).check();
  await page.getByRole('button', { name: 'Translate' }).click();
  await settle(page);
  const rows = page.locator('#results tbody tr');
  assert.equal(await rows.count(), sentences.length);
  const out: PageTranslation[] = [];
  for (let i = 0; i < sentences.length; i++) {
    const row = rows.nth(i);
    out.push({
      browser: await row.locator('td.browser-text').getAttribute('data-text'),
      server: await row.locator('td.server-text').getAttribute('data-text'),
      ms: await row.locator('td.browser-ms').textContent(),
    });
  }
  return out;
}

/** Where the tests serve onnxruntime-web's JavaScript API to the page (the page bundles its own copy). */
export const ORT_API_PATH = '/__test__/ort.wasm.min.mjs';

/**
 * Serves onnxruntime-web's API module at `ORT_API_PATH` of `serverUrl` to `page`, so a test can run
 * sessions in the page's context with the runtime build the page uses; returns its URL.
 */
export async function routeOrtApi(page: Page, serverUrl: string): Promise<string> {
  const api = await readFile(join(ortDistDir(), 'ort.wasm.min.mjs'));
  const url = `${serverUrl}${ORT_API_PATH}`;
  await page.route(url, (route) =>
    route.fulfill({ status: 200, contentType: 'text/javascript; charset=utf-8', body: api }),
  );
  return url;
}

/** A tensor as it crosses into the page: plain numbers (int64 as numbers: ids and lengths are small). */
export interface WireTensor {
  type: 'float32' | 'int64';
  dims: number[];
  data: number[];
}

export function toWire(t: ort.Tensor): WireTensor {
  if (t.type !== 'float32' && t.type !== 'int64') throw new Error(`unexpected ${t.type} tensor`);
  const data = t.type === 'int64' ? Array.from(t.data as BigInt64Array, Number) : Array.from(t.data as Float32Array);
  return { type: t.type, dims: [...t.dims], data };
}

/**
 * Loads the served model `name` through the page's UI and translates the first `count` lines of the toy corpus's
 * test sources (`root/toy/test.src`) with beam 3: the page must end ready, and give word for word what
 * POST /v1/translate gives, with at least one word in all (so something was compared).
 */
export async function assertPageTranslatesAsServer(web: PageFixture, name: string, count = 4): Promise<void> {
  const { page } = web;
  await openPage(page, web.serverUrl);
  await loadModelInPage(page, name);
  const sentences = (await readFile(join(web.root, 'toy', 'test.src'), 'utf8')).trim().split('\n').slice(0, count);
  const rows = await translateInPage(page, sentences, 3, true);
  const state = await page.getAttribute('body', 'data-state');
  assert.equal(state, 'ready', `the page is '${state}': ${await page.textContent('#status')}`);
  let words = 0;
  rows.forEach(({ browser: inBrowser, server: onServer }, i) => {
    assert.ok(inBrowser !== null, `no browser translation of '${sentences[i]}'`);
    assert.equal(inBrowser, onServer, `'${sentences[i]}'`);
    words += inBrowser.split(' ').filter(Boolean).length;
  });
  assert.ok(words > 0, 'every translation is empty: nothing was compared');
}
