import express, { type Express, type Request, type Response } from 'express';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { Translation, TranslationHypothesis } from '../core/runtime/seq2seq.ts';
import { errorHandler, HttpError, notFoundHandler } from './errors.ts';
import type { ModelRegistry } from './model-registry.ts';
import { DEFAULT_LIMITS, parseTranslateRequest, type RequestLimits } from './schemas.ts';
import { webRouter } from './static.ts';

/** Options of {@link createApp}. */
export interface AppOptions {
  registry: ModelRegistry;
  /** Overrides of {@link DEFAULT_LIMITS}. */
  limits?: Partial<RequestLimits>;
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

/**
 * The HTTP API: `POST /v1/translate`, `GET /v1/models`, `GET /healthz`. Request logging and the
 * listening socket belong to server.ts, so tests and embedders can mount this app as they like.
 */
export function createApp(opts: AppOptions): Express {
  const { registry } = opts;
  const limits: RequestLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const onInternal = opts.onInternalError ?? ((err: unknown) => process.stderr.write(`frost serve: ${(err as Error)?.stack ?? String(err)}\n`));

  const app = express();
  app.disable('x-powered-by');

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.get('/v1/models', (_req, res) => {
    res.json({ default: registry.defaultName ?? null, models: registry.list().map((m) => summarise(m.runtime.card)) });
  });

  app.post(
    '/v1/translate',
    requireJson,
    express.json({ limit: limits.maxBodyBytes }),
    async (req: Request, res: Response) => {
      const started = performance.now();
      const request = parseTranslateRequest(req.body, limits);
      const model = registry.get(request.model);
      const translations = await model.runtime.translate(request.texts, request.options);
      const body: TranslateResponse = {
        model: model.name,
        translations: translations.map(toWire),
        timing: {
          total_ms: Math.round((performance.now() - started) * 100) / 100,
          tokens: translations.reduce((n, t) => n + t.tokens.length, 0),
        },
      };
      res.json(body);
    },
  );

  app.use(webRouter({ registry }));
  app.use(notFoundHandler());
  app.use(errorHandler(onInternal));
  return app;
}

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
