/**
 * The abort signal of one decoding request: its timeout, counted from arrival (so time spent
 * reading an upload counts), or the client hanging up, whichever comes first. The batcher drops an
 * aborted request from its queue, so nobody decodes for a client that is gone.
 */
import type { Response } from 'express';
import { HttpError } from './errors.ts';

export interface RequestDeadline {
  signal: AbortSignal;
  /** Stops the timer; call it once the request is answered. */
  clear(): void;
}

/** Starts the deadline of the request `res` answers; `res.locals.startedAt` is its arrival (request-context.ts). */
export function requestDeadline(res: Response, timeoutMs: number): RequestDeadline {
  const started = (res.locals.startedAt as number | undefined) ?? performance.now();
  const abort = new AbortController();
  const timedOut = () => new HttpError('FROST_ERR_TIMEOUT', { ms: timeoutMs });
  const timer = setTimeout(() => abort.abort(timedOut()), Math.max(0, timeoutMs - (performance.now() - started)));
  // A client that hangs up gets no answer; the timeout error only serves to reject the request.
  res.on('close', () => {
    if (!res.writableFinished) abort.abort(timedOut());
  });
  return { signal: abort.signal, clear: () => clearTimeout(timer) };
}
