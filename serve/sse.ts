/**
 * Server-sent events for `POST /v1/translate?stream=1`: a `prefix` event whenever the best prefix
 * of a text changes (`{index, text}`), then one `result` event holding the JSON answer, or one
 * `error` event holding the error body. Errors found before decoding starts (validation, unknown
 * model, full queue) are plain JSON responses with their status, since no stream was begun. A client
 * that goes away mid-stream is reported once (`onClientGone`: a log line and a metric, in app.ts).
 */
import type { Response } from 'express';
import { errorBody, toHttpError } from './errors.ts';

/** An open event stream on `res`. */
export class EventStream {
  private ended = false;

  /**
   * Sends the 200 and the event-stream headers now, so the client sees the stream open.
   * @param onClientGone called once when the client closes the connection before the stream ends (its
   *   request's abort signal then cancels the decoding: request-deadline.ts)
   */
  constructor(
    private readonly res: Response,
    onClientGone?: () => void,
  ) {
    res.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      // Proxies (nginx) would otherwise buffer the events until the end.
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    res.once('close', () => {
      if (this.ended) return;
      this.ended = true;
      onClientGone?.();
    });
  }

  /** Writes one event; JSON data never holds a raw newline, so one `data:` line suffices. */
  send(event: string, data: unknown): void {
    if (this.ended || this.res.writableEnded) return;
    this.res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Writes the final `result` event and ends the response. */
  end(result: unknown): void {
    this.send('result', result);
    this.close();
  }

  /** Writes an `error` event (the usual error body) and ends the response. */
  fail(err: unknown): void {
    const httpErr = toHttpError(err);
    this.res.locals.errorCode = httpErr.code;
    this.send('error', errorBody(httpErr, this.res.locals.requestId as string | undefined));
    this.close();
  }

  private close(): void {
    if (this.ended) return;
    this.ended = true;
    this.res.end();
  }
}
