/**
 * transformers.js in headless Chromium, from this machine only: a small static server gives the page
 * transformers.js's browser build and the onnxruntime-web it depends on (its wasm files included) from
 * node_modules, and the models from a local folder; no CDN is reached (the test checks every request's host).
 * The page exposes `translateAll(model, items)`, which runs `pipeline('translation', model)` over the items.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, join, normalize } from 'node:path';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { launchBrowser, type TestBrowser } from './browser.ts';

const require = createRequire(import.meta.url);
/** transformers.js's dist folder, and the onnxruntime-web its browser build imports (its own pinned version). */
const TRANSFORMERS_DIST = dirname(require.resolve('@huggingface/transformers'));
const ORT_WEB_DIST = join(TRANSFORMERS_DIST, '..', 'node_modules', 'onnxruntime-web', 'dist');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.html': 'text/html',
};

// The browser build imports onnxruntime-web's WebGPU entry and onnxruntime-common by bare name: the import map
// points both at the one onnxruntime-web module, so tensors and sessions share one copy of onnxruntime-common.
const PAGE = `<!doctype html><meta charset="utf-8"><title>transformers.js</title>
<script type="importmap">{"imports": {
  "onnxruntime-web/webgpu": "/ort/ort.webgpu.min.mjs",
  "onnxruntime-common": "/ort/ort.webgpu.min.mjs"
}}</script>
<script type="module">
import { env, pipeline } from '/transformers/transformers.web.js';
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = '/models/';
env.useBrowserCache = false;
env.backends.onnx.wasm.numThreads = 1;
env.backends.onnx.wasm.wasmPaths = {
  mjs: '/ort/ort-wasm-simd-threaded.asyncify.mjs',
  wasm: '/ort/ort-wasm-simd-threaded.asyncify.wasm',
};
window.translateAll = async (model, items) => {
  // No dtype: config.json's transformers.js_config makes fp32 the default (the browser's own is q8).
  const translate = await pipeline('translation', model, { device: 'wasm' });
  const out = [];
  for (const { text, maxNewTokens } of items) {
    const [r] = await translate(text, { max_new_tokens: maxNewTokens });
    out.push(r.translation_text);
  }
  await translate.dispose();
  return out;
};
document.body.dataset.state = 'ready';
</script><body></body>`;

/** One text to translate and the generation cap to give it. */
export interface PageItem {
  text: string;
  maxNewTokens: number;
}

export interface TransformersPage {
  page: Page;
  /** Every URL the page requested. */
  requested: string[];
  /** `pipeline('translation', model)` in the page, over `items`. */
  translateAll(model: string, items: readonly PageItem[]): Promise<string[]>;
  close(): Promise<void>;
}

function staticServer(modelsDir: string): Server {
  const roots: Record<string, string> = { transformers: TRANSFORMERS_DIST, ort: ORT_WEB_DIST, models: modelsDir };
  return createServer((req, res) => {
    void (async () => {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      if (path === '/') {
        res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
        return;
      }
      const [, top, ...rest] = path.split('/');
      const root = roots[top ?? ''];
      const file = root === undefined ? undefined : normalize(join(root, ...rest));
      if (file === undefined || !file.startsWith(root!) || !(await stat(file).catch(() => null))?.isFile()) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
      createReadStream(file).pipe(res);
    })();
  });
}

/** Serves `modelsDir` under /models/ with transformers.js's page, and opens the page in a fresh Chromium. */
export async function openTransformersPage(modelsDir: string): Promise<TransformersPage> {
  const server = staticServer(modelsDir);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  let browser: TestBrowser;
  try {
    browser = await launchBrowser();
  } catch (err) {
    server.close();
    throw err;
  }
  const requested: string[] = [];
  browser.context.on('request', (r) => requested.push(r.url()));
  const page = await browser.context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForSelector('body[data-state="ready"]', { state: 'attached', timeout: 60_000 }).catch((err: Error) => {
    throw new Error(`the page did not start: ${errors.join('; ') || err.message}`);
  });
  return {
    page,
    requested,
    translateAll: (model, items) =>
      page.evaluate(
        ([m, i]) => (window as unknown as { translateAll: (...a: unknown[]) => Promise<string[]> }).translateAll(m, i),
        [model, items] as const,
      ),
    async close() {
      await browser.close();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
