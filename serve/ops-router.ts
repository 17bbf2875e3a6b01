/** The operator's routes: `/healthz` (alive), `/readyz` (ready to translate), `/metrics`, `/openapi.json`. */
import { Router } from 'express';
import type { FolderRefusal } from '../core/wire.ts';
import { HttpError, sendError } from './errors.ts';
import { sendJson } from './json-response.ts';
import type { ServeMetrics } from './metrics.ts';
import type { ModelRegistry } from './model-registry.ts';

/** Options of {@link opsRouter}. */
export interface OpsRouterOptions {
  registry: ModelRegistry;
  metrics: ServeMetrics;
  /** Why the server is not ready (503 on /readyz), or undefined when it is. */
  notReady: () => string | undefined;
  /** The OpenAPI document, serialised once. */
  openApi: string;
  /** Their names are listed by /readyz beside the registry's as `language_models`. @default none */
  languageModels?: { readonly names: string[] };
  /** Folders that could not be loaded; listed as `refused` when there are any. */
  refused: () => readonly FolderRefusal[];
}

export function opsRouter({ registry, metrics, notReady, openApi, languageModels, refused }: OpsRouterOptions): Router {
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
    const lms = languageModels?.names ?? [];
    const bad = refused();
    sendJson(res, {
      status: 'ready',
      models: registry.names,
      ...(lms.length ? { language_models: lms } : {}),
      ...(bad.length ? { refused: bad } : {}),
    });
  });

  router.get('/metrics', async (_req, res) => {
    res.set('Content-Type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openApi);
  });

  return router;
}
