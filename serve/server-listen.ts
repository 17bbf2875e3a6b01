/**
 * The listening socket of `frost serve`: the HTTP server around the app, its connection cap, and the
 * answer to requests that arrive once shutdown has begun.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { httpServerOptions, limitConnections } from './connection-limits.ts';
import { errorBody, HttpError, RETRY_AFTER_S } from './errors.ts';
import type { Logger } from './logger.ts';
import { RequestTracker } from './shutdown.ts';

/** What {@link listen} binds and how. */
export interface ListenOptions {
  port: number;
  host: string;
  timeoutMs: number;
  maxConnections: number;
  logger: Logger;
}

/** A bound server: its URL, and the tracker that drains it. */
export interface Listening {
  server: Server;
  tracker: RequestTracker;
  /** e.g. `http://127.0.0.1:8080` */
  url: string;
}

/**
 * Serves `app` on `host:port`; once shutdown begins (`tracker.drain`), new requests get 503.
 * @throws Error naming the address when it cannot be bound
 */
export async function listen(app: Express, opts: ListenOptions): Promise<Listening> {
  const { port, host } = opts;
  const server = createServer(httpServerOptions(opts.timeoutMs), (req: IncomingMessage, res: ServerResponse) => {
    tracker.track(req, res);
    if (tracker.isDraining) refuseWhileDraining(res);
    else app(req, res);
  });
  const tracker = new RequestTracker(server);
  limitConnections(server, opts.maxConnections, opts.logger);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    throw new Error(`cannot listen on ${host}:${port}: ${(err as Error).message}`, { cause: err });
  }
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { server, tracker, url: `http://${shownHost}:${address.port}` };
}

/** The answer to a request that arrives once shutdown has begun: 503, retry elsewhere, and the connection closes. */
function refuseWhileDraining(res: ServerResponse): void {
  const body = JSON.stringify(errorBody(new HttpError('FROST_ERR_NOT_READY', { reason: 'shutting down' })));
  res.writeHead(503, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Retry-After': String(RETRY_AFTER_S),
    Connection: 'close',
  });
  res.end(body);
}
