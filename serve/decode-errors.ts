/**
 * Errors of the decoding side (batchers, decode threads, batch kinds). They say what went wrong in
 * the domain's terms; the HTTP layer (errors.ts, `toHttpError`) maps each to its catalogue code and
 * status, so nothing below the routes knows about HTTP.
 */

/** The model's queue is full; the request was not queued. */
export class QueueFullError extends Error {
  constructor(readonly queue: number) {
    super(`the queue is full (${queue} requests waiting)`);
    this.name = 'QueueFullError';
  }
}

/** The decode thread died while it held the request's batch. */
export class DecoderCrashedError extends Error {
  constructor(
    readonly model: string,
    options?: ErrorOptions,
  ) {
    super(`the decode thread of model '${model}' died`, options);
    this.name = 'DecoderCrashedError';
  }
}

/** A caption model's runtime that cannot caption (a bare Seq2SeqRuntime an embedder registered). */
export class CaptionUnavailableError extends Error {
  constructor(readonly model: string) {
    super(`model '${model}' has no caption runtime`);
    this.name = 'CaptionUnavailableError';
  }
}
