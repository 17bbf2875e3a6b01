/**
 * The first middleware of the app: gives every request an id (echoing a plain `x-request-id`),
 * and when the response ends, records its latency and error code in the metrics and writes one
 * JSON log line. Being first, it covers every route and every error.
 */
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from './logger.ts';
import type { ServeMetrics } from './metrics.ts';

/** A client-supplied request id is echoed only when it is short and plain, since it lands in logs. */
const REQUEST_ID = /^[\w.:@/-]{1,128}$/;

/** Sets `res.locals.requestId` and `res.locals.startedAt`; handlers set `res.locals.errorCode` (sendError does). */
export function requestContext(metrics: ServeMetrics, logger?: Logger): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = performance.now();
    const given = req.get('x-request-id');
    const id = given && REQUEST_ID.test(given) ? given : randomUUID();
    res.locals.requestId = id;
    res.locals.startedAt = started;
    res.set('X-Request-Id', id);
    // Read before routing: routers may rewrite req.url, and the query string may hold text.
    const path = req.path;
    metrics.inFlight.inc();
    res.once('close', () => metrics.inFlight.dec());
    res.on('finish', () => {
      const seconds = (performance.now() - started) / 1000;
      const code = res.locals.errorCode as string | undefined;
      metrics.requestDuration.observe(
        { method: req.method, route: routeLabel(req, path), status: res.statusCode },
        seconds,
      );
      if (code) metrics.errors.inc({ code });
      logger?.info(
        {
          reqId: id,
          method: req.method,
          path,
          status: res.statusCode,
          ms: Math.round(seconds * 1e5) / 100,
          ...(code ? { code } : {}),
        },
        'request',
      );
    });
    next();
  };
}

/**
 * The matched route's pattern (`/v1/models/:name/files/:file`), or 'other' when no route matched:
 * a label per raw path would let clients grow the metrics without bound.
 */
function routeLabel(req: Request, path: string): string {
  const pattern: unknown = req.route?.path;
  if (typeof pattern === 'string') return `${req.baseUrl}${pattern}`;
  if (Array.isArray(pattern) && pattern.includes(path)) return path;
  return 'other';
}
