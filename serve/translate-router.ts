/**
 * `POST /v1/translate`: validates the body, hands the texts to the model's batcher under one abort
 * signal (the request timeout or the client hanging up), and answers JSON, or with `?stream=1`
 * server-sent events of the growing prefixes. A caption model's name gets a 400 here, before its
 * decode thread would fail on text it cannot read.
 */
import { Router, type Request, type Response } from 'express';
import type { Translation, TranslationHypothesis } from '../core/runtime/seq2seq.ts';
import type { TranslateResponse, WireHypothesis } from '../core/wire.ts';
import { TRANSLATION } from './batch-kinds.ts';
import type { BatcherPool } from './batcher-pool.ts';
import { kindFamily } from './batcher.ts';
import { HttpError, toHttpError } from './errors.ts';
import { jsonBody } from './json-body.ts';
import { MODEL_VERSION_HEADER, modelVersion } from './model-version.ts';
import { sendJson } from './json-response.ts';
import type { ModelRegistry } from './model-registry.ts';
import { requestDeadline } from './request-deadline.ts';
import { parseTranslateRequest, type RequestLimits } from './schemas.ts';
import { EventStream } from './sse.ts';

/** Options of {@link translateRouter}. */
export interface TranslateRouterOptions {
  registry: ModelRegistry;
  pool: BatcherPool;
  limits: RequestLimits;
  /** Called with unexpected errors of a stream already begun (the error middleware reports the others). */
  onInternal: (err: unknown) => void;
  /** Called when a stream's client went away before its result (its decoding is cancelled). */
  onStreamCancelled?: (route: string, res: Response) => void;
}

export function translateRouter({
  registry,
  pool,
  limits,
  onInternal,
  onStreamCancelled,
}: TranslateRouterOptions): Router {
  const router = Router();
  router.post('/v1/translate', ...jsonBody(limits.maxBodyBytes), async (req: Request, res: Response) => {
    const started = res.locals.startedAt as number;
    const request = parseTranslateRequest(req.body, limits);
    const model = registry.get(request.model, kindFamily(TRANSLATION));
    const { task } = model.runtime.card;
    if (task !== TRANSLATION.task)
      throw new HttpError('FROST_ERR_NOT_A_TRANSLATION_MODEL', { model: model.name, task });
    const batcher = pool.for(model.name, TRANSLATION);
    res.setHeader(MODEL_VERSION_HEADER, modelVersion(model.runtime.card));

    const deadline = requestDeadline(res, limits.timeoutMs);
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
        sendJson(res, answer(await batcher.submit(request.texts, request.options, { signal: deadline.signal })));
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
      const pending = batcher.submit(request.texts, request.options, { signal: deadline.signal, onPrefix });
      stream = new EventStream(res, () => onStreamCancelled?.('/v1/translate', res));
      try {
        stream.end(answer(await pending));
      } catch (err) {
        if (toHttpError(err).code === 'FROST_ERR_INTERNAL') onInternal(err);
        stream.fail(err);
      }
    } finally {
      deadline.clear();
    }
  });
  return router;
}

/** `?stream=1` or `?stream=true`. */
function isStreamRequest(value: unknown): boolean {
  return value === '1' || value === 'true';
}

function toWire(t: Translation): TranslateResponse['translations'][number] {
  const one = (h: TranslationHypothesis): WireHypothesis => ({ text: h.text, score: h.score, log_prob: h.logProb });
  return t.nBest ? { ...one(t), n_best: t.nBest.map(one) } : one(t);
}
