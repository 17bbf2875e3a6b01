/**
 * `POST /v1/complete` and `POST /v1/score` for the registry's language models: the body checked
 * (lm-schemas.ts), the work run under the request's deadline (its timeout or the client hanging
 * up), answered as JSON, or for `/v1/complete?stream=1` as server-sent events: a `token` event per
 * generated token (`{index, token}`), then the `result` event, as `/v1/translate?stream=1` does.
 */
import { randomInt } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type { CompletionRequest } from '../core/runtime/lm.ts';
import type { CompleteResponse, ScoreResponse } from '../core/wire.ts';
import { toHttpError } from './errors.ts';
import { jsonBody } from './json-body.ts';
import { MODEL_VERSION_HEADER, modelVersion } from './model-version.ts';
import { sendJson } from './json-response.ts';
import type { BatcherPool } from './batcher-pool.ts';
import { kindFamily } from './batcher.ts';
import { LM_COMPLETE, LM_SCORE } from './lm-batch-kinds.ts';
import { parseCompleteRequest, parseScoreRequest } from './lm-schemas.ts';
import type { ModelRegistry } from './model-registry.ts';
import { requestDeadline } from './request-deadline.ts';
import type { RequestLimits } from './schemas.ts';
import { EventStream } from './sse.ts';

export interface LmRouterOptions {
  registry: ModelRegistry;
  pool: BatcherPool;
  limits: RequestLimits;
  onInternal: (err: unknown) => void;
  /** Called when a stream's client went away before its result (its decoding is cancelled). */
  onStreamCancelled?: (route: string, res: Response) => void;
}

const ms = (started: number) => Math.round((performance.now() - started) * 100) / 100;

/** Rethrows an abort as its reason (the deadline's HttpError), so the client sees 504 rather than a 500. */
function abortReason(err: unknown, signal: AbortSignal): unknown {
  return signal.aborted ? signal.reason : err;
}

export function lmRouter({ registry, pool, limits, onInternal, onStreamCancelled }: LmRouterOptions): Router {
  const router = Router();

  router.post('/v1/complete', ...jsonBody(limits.maxBodyBytes), async (req: Request, res: Response) => {
    const started = res.locals.startedAt as number;
    const request = parseCompleteRequest(req.body, limits, () => randomInt(0, 2 ** 32));
    const model = registry.get(request.model, kindFamily(LM_COMPLETE));
    res.setHeader(MODEL_VERSION_HEADER, modelVersion(model.runtime.card));
    const deadline = requestDeadline(res, limits.timeoutMs);
    const streamed = req.query.stream === '1' || req.query.stream === 'true';
    let index = 0;
    let stream: EventStream | undefined;
    try {
      // A full queue throws here, before the response commits to events, so it is a plain 503.
      const prompt: CompletionRequest = {
        text: request.text,
        ...request.sampling,
        maxNewTokens: request.maxNewTokens,
        minNewTokens: request.minNewTokens,
        stop: request.stop,
      };
      const pending = pool.for(model.name, LM_COMPLETE).submit([prompt], null, {
        signal: deadline.signal,
        onPrefix: streamed ? (_, token) => stream?.send('token', { index: index++, token }) : undefined,
      });
      if (streamed) stream = new EventStream(res, () => onStreamCancelled?.('/v1/complete', res));
      const [c] = await pending.catch((err: unknown) => {
        throw abortReason(err, deadline.signal);
      });
      const answer: CompleteResponse = {
        model: model.name,
        completion: c.text,
        tokens: c.tokens,
        log_prob: c.logProb,
        finish_reason: c.finishReason,
        ...(request.sampled ? { seed: request.sampling.seed } : {}),
        timing: { total_ms: ms(started), tokens: c.tokens.length },
      };
      if (stream) stream.end(answer);
      else sendJson(res, answer);
    } catch (err) {
      if (!stream) throw err;
      if (toHttpError(err).code === 'FROST_ERR_INTERNAL') onInternal(err);
      stream.fail(err);
    } finally {
      deadline.clear();
    }
  });

  router.post('/v1/score', ...jsonBody(limits.maxBodyBytes), async (req: Request, res: Response) => {
    const started = res.locals.startedAt as number;
    const request = parseScoreRequest(req.body, limits);
    const model = registry.get(request.model, kindFamily(LM_SCORE));
    res.setHeader(MODEL_VERSION_HEADER, modelVersion(model.runtime.card));
    const deadline = requestDeadline(res, limits.timeoutMs);
    try {
      const batcher = pool.for(model.name, LM_SCORE);
      const [s] = await batcher.submit([request.text], null, { signal: deadline.signal }).catch((err: unknown) => {
        throw abortReason(err, deadline.signal);
      });
      const answer: ScoreResponse = {
        model: model.name,
        tokens: s.tokens,
        token_log_probs: s.tokenLogProbs,
        log_prob: s.logProb,
        perplexity: s.perplexity,
        timing: { total_ms: ms(started) },
      };
      sendJson(res, answer);
    } finally {
      deadline.clear();
    }
  });
  return router;
}
