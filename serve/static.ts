/**
 * The browser client's routes: the page (`/`, built on first request by the {@link WebClient}
 * the CLI hands in), ONNX Runtime's wasm files (`/ort/:file`), and each loaded model's files
 * (`GET /v1/models/:name/files/:file`), which the page downloads to translate in the browser.
 */
import { join } from 'node:path';
import { Router, type NextFunction, type Request, type Response } from 'express';
import type { ModelRegistry } from './model-registry.ts';
import { sendModelFile } from './model-file-route.ts';
import { PAGE_SECURITY_HEADERS } from './same-origin.ts';

/** The built page as the server serves it. */
export interface WebPage {
  /** Files by page-relative path: `index.html`, `app/main.js`, ... */
  files: ReadonlyMap<string, { contents: Uint8Array; contentType: string }>;
}

/** The browser client the server serves (clients/web/build/web-client.ts makes one). */
export interface WebClient {
  /** Builds the page; run once, on the first request for it. */
  bundle(): Promise<WebPage>;
  /** Headers of every page and ORT file (cross-origin isolation, for ORT's wasm threads). */
  headers: Readonly<Record<string, string>>;
  /** onnxruntime-web's runtime files the page fetches: their names, folder and content types. */
  ort: { files: readonly string[]; dir: string; contentType(file: string): string };
}

/** Options of {@link webRouter}. */
export interface WebRouterOptions {
  /** The models of every family, whose files are served alike. */
  registry: ModelRegistry;
  /** The page and its runtime files. @default none: only the model files are served */
  web?: WebClient;
  /** Whether a served model's folder now holds a version that was refused. @default never */
  refusedOnDisk?: (dir: string) => boolean;
}

/** Page files change when the server restarts with new code: revalidate (by ETag) on every load. */
const REVALIDATE = 'no-cache';

/**
 * The router; mount it before the JSON 404 handler. Model files are served only when the card
 * names them (the card itself, its two graphs, and its `files` entries), so no request can reach
 * another file of the model directory, let alone outside it.
 */
export function webRouter(opts: WebRouterOptions): Router {
  const { registry, web } = opts;
  let built: Promise<WebPage> | undefined;
  const page = (client: WebClient): Promise<WebPage> => {
    built ??= client.bundle().catch((err: unknown) => {
      built = undefined; // let the next request try again
      throw err;
    });
    return built;
  };

  const router = Router();

  const sendPageFile = (path: string) => async (_req: Request, res: Response, next: NextFunction) => {
    const asset = web && (await page(web)).files.get(path);
    if (!web || !asset) {
      next();
      return;
    }
    res.set({
      ...web.headers,
      ...PAGE_SECURITY_HEADERS,
      'Content-Type': asset.contentType,
      'Cache-Control': REVALIDATE,
    });
    res.send(Buffer.from(asset.contents.buffer, asset.contents.byteOffset, asset.contents.byteLength));
  };

  router.get(['/', '/index.html'], sendPageFile('index.html'));
  router.get('/app/:file', (req, res, next) => sendPageFile(`app/${req.params.file}`)(req, res, next));

  router.get('/ort/:file', (req, res, next) => {
    const file = req.params.file;
    if (!web || !web.ort.files.includes(file)) {
      next();
      return;
    }
    res.sendFile(
      join(web.ort.dir, file),
      { headers: { ...web.headers, 'Content-Type': web.ort.contentType(file), 'Cache-Control': REVALIDATE } },
      (err) => err && next(err),
    );
  });

  router.get('/v1/models/:name/files/:file', (req, res, next) => {
    const model = registry.get(req.params.name);
    sendModelFile(req, res, next, model, model.dir !== undefined && (opts.refusedOnDisk?.(model.dir) ?? false)).catch(
      next,
    );
  });

  return router;
}
