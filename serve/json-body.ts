/**
 * JSON request bodies for POST routes: refuse other content types and invalid UTF-8 by name
 * rather than let body-parser skip or patch them, and cap the size.
 */
import { isUtf8 } from 'node:buffer';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { HttpError } from './errors.ts';

/** Middleware for a route that takes a JSON body of at most `maxBytes` (413 FROST_ERR_BODY_TOO_LARGE past it). */
export function jsonBody(maxBytes: number): RequestHandler[] {
  return [requireJson, express.json({ limit: maxBytes, verify: requireUtf8 })];
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

/**
 * body-parser replaces invalid UTF-8 with U+FFFD without a word, which would translate garbage;
 * refuse the body instead (body-parser passes this error on to the error handler).
 */
function requireUtf8(_req: unknown, _res: unknown, buf: Buffer): void {
  // Validates in place: a fatal TextDecoder built a string of the whole body only to throw it away.
  if (!isUtf8(buf)) throw new HttpError('FROST_ERR_BAD_ENCODING');
}
