/**
 * The frost server's HTTP API as the page uses it. URLs are relative to the page, so the page works
 * wherever `frost serve` mounts it; when the page is hosted as static files there is no API, and
 * {@link listServerModels} says so by returning undefined.
 */
import type { ErrorResponse, ModelsResponse, TranslateRequestBody, TranslateResponse } from '../../../core/wire.ts';

/** `GET /v1/models`. */
export type ServerModels = ModelsResponse;

/** One sentence translated by the server, and how long it took. */
export interface ServerTranslation {
  text: string;
  /** Request to response, as the page measured it. */
  roundTripMs: number;
  /** The server's own `timing.total_ms`. */
  serverMs: number;
}

/** The folder URL under which the server serves a model's card and graphs. */
export function serverModelFolder(name: string, base: string): string {
  return new URL(`v1/models/${encodeURIComponent(name)}/files/`, base).href;
}

/** The server's models, or undefined when the page is not served by `frost serve`. */
export async function listServerModels(base: string): Promise<ServerModels | undefined> {
  let response: Response;
  try {
    response = await fetch(new URL('v1/models', base), { headers: { accept: 'application/json' } });
  } catch {
    return undefined;
  }
  if (!response.ok || !(response.headers.get('content-type') ?? '').includes('application/json')) return undefined;
  return (await response.json()) as ServerModels;
}

/**
 * Translates one sentence with `POST /v1/translate`.
 * @throws Error with the server's message when it refuses the request
 */
export async function translateOnServer(
  base: string,
  model: string,
  text: string,
  beam: number,
): Promise<ServerTranslation> {
  const started = performance.now();
  const response = await fetch(new URL('v1/translate', base), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, text, beam } satisfies TranslateRequestBody),
  });
  const body = (await response.json()) as TranslateResponse | Partial<ErrorResponse>;
  const roundTripMs = performance.now() - started;
  if (!response.ok || !('translations' in body)) {
    throw new Error(('message' in body ? body.message : undefined) ?? `POST /v1/translate: HTTP ${response.status}`);
  }
  return { text: body.translations[0].text, roundTripMs, serverMs: body.timing.total_ms };
}
