import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { CaptionUnavailableError, DecoderCrashedError, QueueFullError } from './decode-errors.ts';
import { sendJson } from './json-response.ts';

/**
 * Every error the server can answer with, in one place, so clients can switch on a stable `code`
 * and the wording of a message is written once. `{name}` placeholders are filled from the params
 * given to {@link HttpError}.
 */
export const ERRORS = {
  FROST_ERR_BAD_JSON: { statusCode: 400, message: 'Malformed JSON body: {detail}' },
  FROST_ERR_BAD_ENCODING: { statusCode: 400, message: 'Request body is not valid UTF-8' },
  FROST_ERR_INVALID_REQUEST: { statusCode: 400, message: 'Invalid request: {issues}' },
  FROST_ERR_NO_DEFAULT_MODEL: {
    statusCode: 400,
    message: 'No "model" given and no default model is set; available: {available}',
  },
  FROST_ERR_UNKNOWN_MODEL: { statusCode: 404, message: "Unknown model '{model}'; available: {available}" },
  FROST_ERR_NOT_FOUND: { statusCode: 404, message: 'No route for {method} {path}' },
  FROST_ERR_MODEL_FILE_UNAVAILABLE: { statusCode: 404, message: "Model '{model}' cannot serve '{file}': {reason}" },
  FROST_ERR_CROSS_ORIGIN: {
    statusCode: 403,
    message: 'Cross-site request refused: Origin {origin} is not this server ({host}); see frost serve --allow-origin',
  },
  FROST_ERR_BODY_TOO_LARGE: { statusCode: 413, message: 'Request body is larger than the limit of {limit} bytes' },
  FROST_ERR_UNSUPPORTED_MEDIA_TYPE: {
    statusCode: 415,
    message: 'Expected Content-Type application/json, got {contentType}',
  },
  FROST_ERR_UNSUPPORTED_ENCODING: {
    statusCode: 415,
    message: 'Unsupported Content-Encoding {encoding}; send the body as is, or (JSON bodies) gzip, deflate or br',
  },
  FROST_ERR_BAD_BODY: { statusCode: 400, message: 'The request body could not be read: {detail}' },
  // POST /v1/caption: one code per way an upload can fail (core/image/decode-error.ts's reasons).
  FROST_ERR_NO_IMAGE: { statusCode: 400, message: 'No image in the request: {detail}' },
  FROST_ERR_IMAGE_EMPTY: { statusCode: 400, message: 'The image is empty (0 bytes)' },
  FROST_ERR_NOT_AN_IMAGE: { statusCode: 415, message: '{detail}' },
  FROST_ERR_UNSUPPORTED_IMAGE: { statusCode: 415, message: '{detail}' },
  FROST_ERR_IMAGE_TRUNCATED: { statusCode: 400, message: '{detail}' },
  FROST_ERR_IMAGE_CORRUPT: { statusCode: 400, message: '{detail}' },
  FROST_ERR_IMAGE_TOO_LARGE: { statusCode: 413, message: '{detail}' },
  FROST_ERR_CAPTION_CONTENT_TYPE: {
    statusCode: 415,
    message: "Expected Content-Type multipart/form-data (file field 'image') or application/json, got {contentType}",
  },
  FROST_ERR_NOT_A_CAPTION_MODEL: {
    statusCode: 400,
    message: "Model '{model}' is a {task} model, not a caption model; POST /v1/translate takes its requests",
  },
  FROST_ERR_NOT_A_TRANSLATION_MODEL: {
    statusCode: 400,
    message: "Model '{model}' is a {task} model, not a translation model; POST /v1/caption takes its requests",
  },
  // Only for an embedder's app whose registry holds a bare Seq2SeqRuntime; `frost serve` always captions.
  FROST_ERR_CAPTION_UNAVAILABLE: {
    statusCode: 501,
    message:
      "Model '{model}' is a caption model, but its runtime cannot caption (register an InProcessRuntime or a WorkerRuntime)",
  },
  // Nobody reads this answer: it names the request in the log and the metrics.
  FROST_ERR_CLIENT_CLOSED: {
    statusCode: 400,
    message: 'The client closed the connection before its request was complete',
  },
  FROST_ERR_INTERNAL: { statusCode: 500, message: 'Internal server error' },
  FROST_ERR_DECODER_CRASHED: {
    statusCode: 500,
    message:
      "The decoding thread of model '{model}' stopped unexpectedly, so this request was not completed; it is being restarted",
  },
  FROST_ERR_OVERLOADED: {
    statusCode: 503,
    message: 'Server overloaded: {queue} requests are already waiting for this model; retry later',
  },
  FROST_ERR_NOT_READY: { statusCode: 503, message: 'Not ready: {reason}' },
  FROST_ERR_UPLOADS_BUSY: { statusCode: 503, message: 'Server busy with other uploads ({detail}); retry later' },
  FROST_ERR_TIMEOUT: { statusCode: 504, message: 'Request timed out after {ms} ms' },
} as const satisfies Record<string, { statusCode: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** Values for a message template's placeholders. */
export type ErrorParams = Record<string, string | number>;

/** Fills `{name}` placeholders; an unknown placeholder stays visible rather than silently vanishing. */
function fill(template: string, params: ErrorParams): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => (key in params ? String(params[key]) : whole));
}

/** An error that is meant to reach the client, with a catalogue code and its HTTP status. */
export class HttpError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;

  constructor(code: ErrorCode, params: ErrorParams = {}, options?: ErrorOptions) {
    super(fill(ERRORS[code].message, params), options);
    this.name = 'HttpError';
    this.code = code;
    this.statusCode = ERRORS[code].statusCode;
  }
}

/** The JSON body of every error response. */
export interface ErrorBody {
  /** The HTTP reason phrase, e.g. "Bad Request". */
  error: string;
  code: ErrorCode;
  message: string;
  statusCode: number;
  /** The request's id (also in the `x-request-id` header), to find it in the server's log. */
  request_id?: string;
}

/** Shape of the errors body-parser (behind express.json) raises; it has no exported type. */
interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
  message?: string;
  /** The Content-Encoding body-parser could not undo. */
  encoding?: string;
  /** http-errors' flag: the message is meant for the client. */
  expose?: boolean;
}

/** Maps anything thrown in a handler to an {@link HttpError}; unexpected errors become a 500. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  // The decoding side's errors (decode-errors.ts), in HTTP terms.
  if (err instanceof QueueFullError) return new HttpError('FROST_ERR_OVERLOADED', { queue: err.queue }, { cause: err });
  if (err instanceof DecoderCrashedError)
    return new HttpError('FROST_ERR_DECODER_CRASHED', { model: err.model }, { cause: err.cause ?? err });
  if (err instanceof CaptionUnavailableError)
    return new HttpError('FROST_ERR_CAPTION_UNAVAILABLE', { model: err.model }, { cause: err });
  const bp = (err ?? {}) as BodyParserError;
  if (bp.type === 'entity.parse.failed') {
    return new HttpError('FROST_ERR_BAD_JSON', { detail: bp.message ?? 'parse error' }, { cause: err });
  }
  if (bp.type === 'charset.unsupported') {
    return new HttpError(
      'FROST_ERR_UNSUPPORTED_MEDIA_TYPE',
      { contentType: bp.message ?? 'unsupported charset' },
      { cause: err },
    );
  }
  if (bp.type === 'entity.too.large') {
    return new HttpError('FROST_ERR_BODY_TOO_LARGE', { limit: bp.limit ?? 'configured' }, { cause: err });
  }
  if (bp.type === 'encoding.unsupported') {
    return new HttpError(
      'FROST_ERR_UNSUPPORTED_ENCODING',
      { encoding: JSON.stringify(clip(bp.encoding ?? '?')) },
      { cause: err },
    );
  }
  if (bp.type === 'request.aborted') return new HttpError('FROST_ERR_CLIENT_CLOSED', {}, { cause: err });
  // The rest of body-parser's client errors: a gzip or brotli body that does not decompress (zlib's
  // message), a body shorter or longer than its Content-Length.
  if (bp.expose && typeof bp.status === 'number' && bp.status >= 400 && bp.status < 500) {
    return new HttpError('FROST_ERR_BAD_BODY', { detail: clip(bp.message ?? 'unreadable') }, { cause: err });
  }
  return new HttpError('FROST_ERR_INTERNAL', {}, { cause: err });
}

/**
 * The most characters of a model folder's refusal kept for `/readyz`, `/v1/models` and the log line: the reason
 * names the file and the field, and a hostile file must not make every health check megabytes long.
 */
export const REFUSAL_CHARS = 1000;

/** A client's string as it may appear in a message or a log line: 64 characters at most. */
export function clip(text: string, max = 64): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

/** Builds the response body of an {@link HttpError}. */
export function errorBody(err: HttpError, requestId?: string): ErrorBody {
  return {
    error: STATUS_CODES[err.statusCode] ?? 'Error',
    code: err.code,
    message: err.message,
    statusCode: err.statusCode,
    ...(requestId ? { request_id: requestId } : {}),
  };
}

/** Seconds a client should wait before retrying after a 503. */
export const RETRY_AFTER_S = 1;

/**
 * Sends an error as JSON, with `Retry-After` on 503s, and records its code in `res.locals.errorCode`
 * for the metrics and the request log.
 */
export function sendError(res: Response, err: HttpError): void {
  res.locals.errorCode = err.code;
  if (err.statusCode === 503) res.set('Retry-After', String(RETRY_AFTER_S));
  sendJson(res, errorBody(err, res.locals.requestId as string | undefined), err.statusCode);
}

/**
 * The one error middleware (express recognises it by its four parameters). Internal errors are
 * reported through `onInternal` with their stack but answered with a generic message, so no paths
 * or stack traces leak to clients. A client that hung up mid-request is no server error: it goes to
 * `onClientClosed` (a quiet log line) and nothing is sent.
 */
export function errorHandler(
  onInternal: (err: unknown) => void = () => {},
  onClientClosed: (err: HttpError, requestId: string | undefined) => void = () => {},
): ErrorRequestHandler {
  return (err, _req, res, next) => {
    const httpErr = toHttpError(err);
    if (httpErr.code === 'FROST_ERR_CLIENT_CLOSED') {
      res.locals.errorCode = httpErr.code;
      onClientClosed(httpErr, res.locals.requestId as string | undefined);
      if (!res.headersSent) res.destroy();
      return;
    }
    if (res.headersSent) {
      next(err);
      return;
    }
    if (httpErr.code === 'FROST_ERR_INTERNAL') onInternal(err);
    sendError(res, httpErr);
  };
}

/** JSON 404 for anything no route matched; register it after every route. */
export function notFoundHandler(): RequestHandler {
  return (req, _res, next) => {
    next(new HttpError('FROST_ERR_NOT_FOUND', { method: req.method, path: req.path }));
  };
}
