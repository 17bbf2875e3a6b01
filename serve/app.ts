/**
 * The HTTP API, one router per concern: operations (`/healthz`, `/readyz`, `/metrics`,
 * `/openapi.json`), models (`/v1/models`), translation (`POST /v1/translate`), captioning
 * (`POST /v1/caption`), language models (`POST /v1/score`, `/v1/complete`) and the browser client, every
 * model in one registry and every batch through one pool. A new concern is one more router mounted below,
 * before the JSON 404. The listening socket and shutdown belong to server.ts, so tests and embedders can
 * mount this app as they like.
 */
import { resolve } from 'node:path';
import express, { type Express } from 'express';
import type { FolderRefusal } from '../core/wire.ts';
import type { BatchingOptions } from './batcher.ts';
import { BatcherPool } from './batcher-pool.ts';
import { captionRouter } from './caption-route.ts';
import { errorHandler, notFoundHandler } from './errors.ts';
import { lmRouter } from './lm-router.ts';
import type { Logger } from './logger.ts';
import { ServeMetrics } from './metrics.ts';
import type { ModelRegistry } from './model-registry.ts';
import { modelsRouter } from './models-router.ts';
import { openApiDocument } from './openapi.ts';
import { opsRouter } from './ops-router.ts';
import { reportsRouter } from './reports-static.ts';
import { requestContext } from './request-context.ts';
import { sameOriginPosts } from './same-origin.ts';
import { DEFAULT_LIMITS, type RequestLimits } from './schemas.ts';
import { webRouter, type WebClient } from './static.ts';
import { translateRouter } from './translate-router.ts';

/** Options of {@link createApp}. */
export interface AppOptions {
  /** The models of every family (serve/model-registry.ts). */
  registry: ModelRegistry;
  /** Overrides of {@link DEFAULT_LIMITS}. */
  limits?: Partial<RequestLimits>;
  /** Dynamic batching settings (ignored when `pool` is given). */
  batching?: Partial<BatchingOptions>;
  /** The batchers to decode with. @default a new pool over `registry` */
  pool?: BatcherPool;
  /** @default a new {@link ServeMetrics} */
  metrics?: ServeMetrics;
  /** Request log (one line per finished request). @default none */
  logger?: Logger;
  /** Why the server is not ready (503 on /readyz), or undefined when it is. @default ready once a model is loaded */
  notReady?: () => string | undefined;
  /** Called with unexpected errors (answered as a generic 500). @default writes the stack to stderr */
  onInternalError?: (err: unknown) => void;
  /** Origins besides the server's own whose browsers may POST to it (serve/same-origin.ts). @default none */
  allowedOrigins?: readonly string[];
  /** The browser client served at `/` (clients/web/build/web-client.ts). @default none: no page */
  web?: WebClient;
  /** Model folders that could not be loaded, listed by `/readyz` and `/v1/models` when there are any. @default none */
  refused?: () => readonly FolderRefusal[];
  /** Whether a served model's folder now holds a version that was refused (its files are not the served ones). */
  refusedOnDisk?: (dir: string) => boolean;
  /**
   * Folder served as static files under /reports/ (`frost report --out reports/NAME`). @default `reports` in the
   * working directory
   */
  reportsDir?: string;
}

export function createApp(opts: AppOptions): Express {
  const { registry } = opts;
  const limits: RequestLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const metrics = opts.metrics ?? new ServeMetrics();
  const pool = opts.pool ?? new BatcherPool(registry, opts.batching, metrics);
  const refused = opts.refused ?? (() => []);
  const notReady = opts.notReady ?? (() => (registry.list().length ? undefined : 'no model loaded'));
  const onInternal =
    opts.onInternalError ??
    ((err: unknown) => process.stderr.write(`frost serve: ${(err as Error)?.stack ?? String(err)}\n`));

  const app = express();
  app.disable('x-powered-by');
  app.use(requestContext(metrics, opts.logger));
  app.use(sameOriginPosts(opts.allowedOrigins));
  app.use(
    opsRouter({
      registry,
      metrics,
      notReady,
      openApi: JSON.stringify(openApiDocument(limits)),
      refused,
    }),
  );
  app.use(modelsRouter(registry, refused));
  // A client gone mid-stream is no error (its decoding is cancelled), but an operator sees it: one line, one count.
  const onStreamCancelled = (route: string, res: express.Response) => {
    metrics.streamsCancelled.inc({ route });
    opts.logger?.info({ reqId: res.locals.requestId as string, route }, 'client closed the stream; decoding cancelled');
  };
  app.use(translateRouter({ registry, pool, limits, onInternal, onStreamCancelled }));
  app.use(captionRouter({ registry, pool, limits }));
  app.use(lmRouter({ registry, pool, limits, onInternal, onStreamCancelled }));
  // Reports (issue #7): `reports/NAME/report.html` at /reports/NAME/; what is not there falls through to the JSON 404.
  app.use('/reports', reportsRouter(opts.reportsDir ?? resolve('reports')));
  app.use(webRouter({ registry, web: opts.web, refusedOnDisk: opts.refusedOnDisk }));
  app.use(notFoundHandler());
  app.use(
    errorHandler(onInternal, (err, reqId) =>
      opts.logger?.info({ reqId, code: err.code }, 'client closed the connection mid-request'),
    ),
  );
  return app;
}
