/** The operator's routes: `/healthz` (alive), `/readyz` (ready to translate), `/metrics`, `/openapi.json`. */
import { Router } from 'express';
import type { FolderRefusal } from '../core/wire.ts';
import { HttpError, sendError } from './errors.ts';
import { sendJson } from './json-response.ts';
import type { ServeMetrics } from './metrics.ts';
import type { ModelRegistry } from './model-registry.ts';
import { servedFamily, servedFamilyNames } from './served-families.ts';

/** Options of {@link opsRouter}. */
export interface OpsRouterOptions {
  registry: ModelRegistry;
  metrics: ServeMetrics;
  /** Why the server is not ready (503 on /readyz), or undefined when it is. */
  notReady: () => string | undefined;
  /** The OpenAPI document, serialised once. */
  openApi: string;
  /** Folders that could not be loaded; listed as `refused` when there are any. */
  refused: () => readonly FolderRefusal[];
}

export function opsRouter({ registry, metrics, notReady, openApi, refused }: OpsRouterOptions): Router {
  const router = Router();

  // Answered on the event loop alone (decoding runs in worker threads), so a busy server still answers.
  router.get('/healthz', (_req, res) => {
    sendJson(res, { status: 'ok' });
  });

  router.get('/readyz', (_req, res) => {
    const reason = notReady();
    if (reason !== undefined) {
      sendError(res, new HttpError('FROST_ERR_NOT_READY', { reason }));
      return;
    }
    const body: Record<string, unknown> = { status: 'ready' };
    // Each family's names under its key of /v1/models.
    for (const family of servedFamilyNames()) {
      const { listing } = servedFamily(family);
      const names = registry.names(family);
      if (names.length > 0 || listing.always) body[listing.key] = names;
    }
    const bad = refused();
    if (bad.length) body.refused = bad;
    sendJson(res, body);
  });

  router.get('/metrics', async (_req, res) => {
    res.set('Content-Type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openApi);
  });

  return router;
}
