/**
 * What one connection may cost the server: how long its request may take to arrive, and how many
 * connections may be open at once. Node's defaults (5 minutes per request body, 60 s for headers,
 * checked every 30 s, and no cap on connections) let a few hundred clients that send half a body
 * hold every file descriptor; `/healthz` then stopped answering.
 */
import { readFileSync } from 'node:fs';
import type { Server, ServerOptions } from 'node:http';
import type { Logger } from './logger.ts';

/** File descriptors kept back for the server's own files, models, threads and logs. */
const RESERVED_FDS = 64;
/** Used where the descriptor limit cannot be read (not Linux). */
const FALLBACK_MAX_CONNECTIONS = 1024;

/**
 * The default `--max-connections`: the process's open-file limit (`ulimit -n`) less
 * {@link RESERVED_FDS}, so that sockets run out before descriptors do, at most 16384.
 */
export function defaultMaxConnections(limitsFile = '/proc/self/limits'): number {
  let soft: number;
  try {
    const row = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(limitsFile, 'utf8'));
    soft = row === null ? NaN : row[1] === 'unlimited' ? Infinity : Number(row[1]);
  } catch {
    soft = NaN;
  }
  if (!(soft > RESERVED_FDS)) return FALLBACK_MAX_CONNECTIONS;
  return Math.min(16_384, soft - RESERVED_FDS);
}

/**
 * Options for `http.createServer` under a request timeout of `timeoutMs`: the whole request
 * (headers and body) must arrive within it, headers within it too (at most 60 s), and Node checks
 * both often enough that a stalled request is dropped, with a 408, within a second of its deadline.
 */
export function httpServerOptions(timeoutMs: number): ServerOptions {
  return {
    requestTimeout: timeoutMs,
    headersTimeout: Math.min(timeoutMs, 60_000),
    connectionsCheckingInterval: Math.max(50, Math.min(500, Math.floor(timeoutMs / 4))),
  };
}

/**
 * Caps the open connections at `max`: Node closes a connection past it as soon as it is accepted,
 * so its descriptor is freed at once. Drops are logged at most once a second, with their count.
 */
export function limitConnections(server: Server, max: number, logger?: Logger): void {
  if (!Number.isInteger(max) || max < 1)
    throw new RangeError(`'maxConnections' must be a positive integer, got ${max}`);
  server.maxConnections = max;
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  server.on('drop', () => {
    dropped++;
    timer ??= setTimeout(() => {
      logger?.warn({ dropped, maxConnections: max }, 'connections refused: --max-connections reached');
      dropped = 0;
      timer = undefined;
    }, 1000).unref();
  });
}
