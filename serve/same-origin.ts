/**
 * Cross-site requests and framing. A browser on any site can POST a form to this server (a
 * multipart `POST /v1/caption` is a "simple" request, sent without a CORS preflight), spending its
 * decoding time for another site's page; and the page and reports could be framed by another site.
 * So state-changing requests whose `Origin` (or `Sec-Fetch-Site`) says they come from another site
 * are refused with 403, and the page and reports carry a CSP and `X-Frame-Options`. Clients that
 * are not browsers send no `Origin` and are not affected.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { clip, HttpError } from './errors.ts';

/**
 * Headers for the page and the reports: no framing by other sites, no plugins, no `<base>`
 * rewriting, no MIME sniffing. Scripts are left to the page (ORT's wasm needs its own workers).
 */
export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "frame-ancestors 'self'; object-src 'none'; base-uri 'self'; form-action 'self'",
  'X-Frame-Options': 'SAMEORIGIN',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
};

/** Methods that cannot change anything, which any origin may send. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses (403 FROST_ERR_CROSS_ORIGIN) a request with a body whose `Origin` is neither this server
 * (the `Host` it was sent to) nor one of `allowedOrigins` (e.g. `https://app.example.com`).
 */
export function sameOriginPosts(allowedOrigins: readonly string[] = []): RequestHandler {
  const allowed = new Set(allowedOrigins.map((o) => o.replace(/\/+$/, '').toLowerCase()));
  return (req: Request, _res: Response, next: NextFunction) => {
    if (SAFE_METHODS.has(req.method)) {
      next();
      return;
    }
    const origin = req.get('origin');
    const site = req.get('sec-fetch-site');
    if (origin === undefined) {
      // Without Origin, only a browser's own word that the request is cross-site counts.
      next(
        site === 'cross-site'
          ? new HttpError('FROST_ERR_CROSS_ORIGIN', { origin: '(none)', host: clip(req.get('host') ?? '') })
          : undefined,
      );
      return;
    }
    if (allowed.has(origin.toLowerCase()) || sameHost(origin, req.get('host'))) {
      next();
      return;
    }
    next(new HttpError('FROST_ERR_CROSS_ORIGIN', { origin: clip(origin), host: clip(req.get('host') ?? '(none)') }));
  };
}

/** Whether an Origin (`http://host:port`, or `null`) names the host the request was sent to. */
function sameHost(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    return new URL(origin).host.toLowerCase() === host.toLowerCase();
  } catch {
    return false; // 'null' (sandboxed frames, file: pages) and garbage
  }
}
