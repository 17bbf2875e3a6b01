/**
 * The JSON answer of a decoding route (`POST /v1/translate`, `/v1/caption`, `/v1/score`, `/v1/complete`),
 * written as one string in one socket write. express's `res.json` hashes every body for an ETag (which no
 * client can use on a POST: a second POST decodes again) and turns a body with one into a Buffer, written
 * apart from the headers. From the answer built to `res.end` that took 0.15 ms against 0.04 ms here, on the
 * request's critical path (docs/decoding-speed.md, "HTTP overhead at c=1").
 */
import type { ServerResponse } from 'node:http';

/** Answers `status` with `body` as JSON (UTF-8); headers set before (X-Request-Id) are kept. */
export function sendJson(res: ServerResponse, body: unknown, status = 200): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
