import { randomUUID } from 'node:crypto';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { Translation, TranslationHypothesis } from '../core/runtime/seq2seq.ts';
import type { BatchingOptions } from './batcher.ts';
import { BatcherPool } from './batcher-pool.ts';
import { errorHandler, HttpError, notFoundHandler, sendError, toHttpError } from './errors.ts';
import type { Logger } from './logger.ts';
import { ServeMetrics } from './metrics.ts';
import type { ModelRegistry } from './model-registry.ts';
import { openApiDocument } from './openapi.ts';
import { DEFAULT_LIMITS, parseTranslateRequest, type RequestLimits } from './schemas.ts';
import { EventStream } from './sse.ts';
import { webRouter } from './static.ts';

/** Options of {@link createApp}. */
export interface AppOptions {
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
}

/**
 * One hypothesis as sent over the wire (snake_case). A hypothesis the model gave zero probability
 * has score and log_prob -Infinity, which JSON writes as null.
 */
export interface WireHypothesis {
  text: string;
  score: number;
  log_prob: number;
}

/** The body of a `POST /v1/translate` answer. */
export interface TranslateResponse {
  model: string;
  translations: Array<WireHypothesis & { n_best?: WireHypothesis[] }>;
  timing: { total_ms: number; tokens: number };
}

/** A card as `GET /v1/models` lists it: the vocabularies replaced by their sizes. */
export type ModelSummary = Omit<ModelCard, 'source' | 'target'> & {
  source?: { lang: string; size: number };
  target: { lang: string; size: number };
};

/** Routes with their own latency series; anything else is 'other', so clients cannot blow up label cardinality. */
const METRIC_ROUTES = new Set(['/v1/translate', '/v1/models', '/healthz', '/readyz', '/metrics', '/openapi.json', '/']);

/** A client-supplied request id is echoed only when it is short and plain, since it lands in logs. */
const REQUEST_ID = /^[\w.:@/-]{1,128}$/;

/**
 * The HTTP API: `POST /v1/translate` (JSON or `?stream=1` server-sent events), `GET /v1/models`,
 * `/healthz`, `/readyz`, `/metrics`, `/openapi.json`, and the browser client's routes. The
 * listening socket and shutdown belong to server.ts, so tests and embedders can mount this app as
 * they like.
 */
export function createApp(opts: AppOptions): Express {
  const { registry, logger } = opts;
  const limits: RequestLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const metrics = opts.metrics ?? new ServeMetrics();
  const pool = opts.pool ?? new BatcherPool(registry, opts.batching, metrics);
  const notReady = opts.notReady ?? (() => (registry.names.length ? undefined : 'no model loaded'));
  const onInternal = opts.onInternalError ?? ((err: unknown) => process.stderr.write(`frost serve: ${(err as Error)?.stack ?? String(err)}\n`));
  const openApi = JSON.stringify(openApiDocument(limits));

  const app = express();
  app.disable('x-powered-by');

  // Request id, metrics and the request log first, so they cover every route and error.
  app.use((req: Request, res: Response, next: NextFunction) => {
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
      metrics.requestDuration.observe({ method: req.method, route: METRIC_ROUTES.has(path) ? path : 'other', status: res.statusCode }, seconds);
      if (code) metrics.errors.inc({ code });
      logger?.info(
        { reqId: id, method: req.method, path, status: res.statusCode, ms: Math.round(seconds * 1e5) / 100, ...(code ? { code } : {}) },
        'request',
      );
    });
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.get('/readyz', (_req, res) => {
    const reason = notReady();
    if (reason !== undefined) {
      sendError(res, new HttpError('FROST_ERR_NOT_READY', { reason }));
      return;
    }
    res.json({ status: 'ready', models: registry.names });
  });

  app.get('/metrics', async (_req, res) => {
    res.set('Content-Type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openApi);
  });

  app.get('/v1/models', (_req, res) => {
    res.json({ default: registry.defaultName ?? null, models: registry.list().map((m) => summarise(m.runtime.card)) });
  });

  app.post(
    '/v1/translate',
    requireJson,
    express.json({ limit: limits.maxBodyBytes, verify: requireUtf8 }),
    async (req: Request, res: Response) => {
      const started = res.locals.startedAt as number;
      const request = parseTranslateRequest(req.body, limits);
      const model = registry.get(request.model);
      const batcher = pool.for(model.name);

      // One signal ends the request's work: the timeout, or the client hanging up.
      const abort = new AbortController();
      const timeout = setTimeout(
        () => abort.abort(new HttpError('FROST_ERR_TIMEOUT', { ms: limits.timeoutMs })),
        Math.max(0, limits.timeoutMs - (performance.now() - started)),
      );
      res.on('close', () => {
        if (!res.writableFinished) abort.abort(new HttpError('FROST_ERR_TIMEOUT', { ms: limits.timeoutMs }));
      });
      const answer = (translations: Translation[]): TranslateResponse => ({
        model: model.name,
        translations: translations.map(toWire),
        timing: {
          total_ms: Math.round((performance.now() - started) * 100) / 100,
          tokens: translations.reduce((n, t) => n + t.tokens.length, 0),
        },
      });

      try {
        if (!isStreamRequest(req.query.stream)) {
          res.json(answer(await batcher.submit(request.texts, request.options, { signal: abort.signal })));
          return;
        }
        const last: string[] = [];
        let stream: EventStream | undefined;
        const onPrefix = (index: number, text: string) => {
          if (last[index] === text) return;
          last[index] = text;
          stream?.send('prefix', { index, text });
        };
        // submit throws a full queue synchronously: still time for a plain 503.
        const pending = batcher.submit(request.texts, request.options, { signal: abort.signal, onPrefix });
        stream = new EventStream(res);
        try {
          stream.end(answer(await pending));
        } catch (err) {
          if (toHttpError(err).code === 'FROST_ERR_INTERNAL') onInternal(err);
          stream.fail(err);
        }
      } finally {
        clearTimeout(timeout);
      }
    },
  );

  app.use(webRouter({ registry }));
  app.use(notFoundHandler());
  app.use(errorHandler(onInternal));
  return app;
}

/** `?stream=1` or `?stream=true`. */
function isStreamRequest(value: unknown): boolean {
  return value === '1' || value === 'true';
}

/**
 * body-parser replaces invalid UTF-8 with U+FFFD without a word, which would translate garbage;
 * refuse the body instead (body-parser passes this error on to the error handler).
 */
function requireUtf8(_req: unknown, _res: unknown, buf: Buffer): void {
  try {
    utf8.decode(buf);
  } catch {
    throw new HttpError('FROST_ERR_BAD_ENCODING');
  }
}
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * express.json() silently skips other content types, which would surface as a confusing
 * "expected object" validation error; say what is wrong instead.
 */
function requireJson(req: Request, _res: Response, next: (err?: unknown) => void): void {
  if (req.is('application/json')) {
    next();
    return;
  }
  next(new HttpError('FROST_ERR_UNSUPPORTED_MEDIA_TYPE', { contentType: req.get('content-type') ?? '(none)' }));
}

function toWire(t: Translation): TranslateResponse['translations'][number] {
  const one = (h: TranslationHypothesis): WireHypothesis => ({ text: h.text, score: h.score, log_prob: h.logProb });
  return t.nBest ? { ...one(t), n_best: t.nBest.map(one) } : one(t);
}

/** The card without its token lists, which can be tens of thousands of strings. */
function summarise(card: ModelCard): ModelSummary {
  const { source, target, ...rest } = card;
  return {
    ...rest,
    ...(source ? { source: { lang: source.lang, size: source.tokens.length } } : {}),
    target: { lang: target.lang, size: target.tokens.length },
  };
}
