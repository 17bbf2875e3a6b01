import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Device } from '../core/runtime/load-node.ts';
import { createApp } from './app.ts';
import { ModelRegistry } from './model-registry.ts';
import type { RequestLimits } from './schemas.ts';

/** Options of {@link startServer}. */
export interface ServerOptions {
  /** A model directory, or a directory of model directories. */
  modelsDir: string;
  /** 0 picks a free port. @default 8080 */
  port?: number;
  /** @default '127.0.0.1' (not exposed to the network unless asked) */
  host?: string;
  /** @default 'cpu' */
  device?: Device;
  /** ORT intra-op threads per session; 0 lets ORT pick. @default 0 */
  intraOpNumThreads?: number;
  /** The model used when a request names none. */
  defaultModel?: string;
  limits?: Partial<RequestLimits>;
  /** Where the request log and notes go. @default stderr */
  log?: (line: string) => void;
}

/** A running server. */
export interface RunningServer {
  /** e.g. `http://127.0.0.1:8080` */
  url: string;
  registry: ModelRegistry;
  /** Stops listening, drops open connections, and releases the models. */
  close(): Promise<void>;
}

/**
 * Loads the models and starts listening.
 * @throws Error naming the directory or file when a model cannot be loaded, or the address when
 *   the port cannot be bound
 */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const port = opts.port ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`port must be an integer in 0..65535, got ${port}`);
  const host = opts.host ?? '127.0.0.1';

  const registry = await ModelRegistry.load(opts.modelsDir, {
    device: opts.device,
    intraOpNumThreads: opts.intraOpNumThreads,
    defaultModel: opts.defaultModel,
    log,
  });
  const app = createApp({ registry, limits: opts.limits, onInternalError: (err) => log(`error: ${(err as Error)?.stack ?? String(err)}`) });

  // Logging wraps the app rather than living in it, so the line is written once the response is
  // finished, with its final status, whatever route or error handler produced it.
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    // Read before routing: the query string may hold text, and routers may rewrite req.url.
    const path = (req.url ?? '/').split('?')[0];
    res.on('finish', () => {
      log(`${req.method} ${path} ${res.statusCode} ${(performance.now() - started).toFixed(1)}ms`);
    });
    app(req, res);
  });

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await registry.close().catch(() => undefined);
    throw new Error(`cannot listen on ${host}:${port}: ${(err as Error).message}`, { cause: err });
  }

  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${shownHost}:${address.port}`;
  for (const m of registry.list()) log(`model '${m.name}' from ${m.dir ?? '?'}${m.name === registry.defaultName ? ' (default)' : ''}`);
  log(`frost serve listening on ${url}`);

  let closing: Promise<void> | undefined;
  return {
    url,
    registry,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections would otherwise hold close() open until they time out.
        server.closeAllConnections();
      }).then(() => registry.close());
      return closing;
    },
  };
}
