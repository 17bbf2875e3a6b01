/**
 * Headless Chromium for browser tests, driven by playwright-core. The browser is the system's
 * (Debian's `chromium` package), never a downloaded one; tests skip, saying why, where it is missing.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

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
