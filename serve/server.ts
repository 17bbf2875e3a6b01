/**
 * `frost serve`: load the models (server-load.ts), listen (server-listen.ts), and with `--watch` reload
 * them (watch.ts); the HTTP API itself is app.ts's.
 */
import { familyOf } from '../core/runtime/card-kinds.ts';
import type { Device } from '../core/runtime/load-node.ts';
import { createApp } from './app.ts';
import { DEFAULT_BATCHING, type BatchingOptions } from './batcher.ts';
import { defaultMaxConnections } from './connection-limits.ts';
import { createLogger, type Logger } from './logger.ts';
import { ServeMetrics } from './metrics.ts';
import { hasModelCard } from './model-folders.ts';
import type { ModelRegistry } from './model-registry.ts';
import { DEFAULT_LIMITS, type RequestLimits } from './schemas.ts';
import { servedFamily } from './served-families.ts';
import type { ServedModels } from './served-models.ts';
import { loadFolder, loadServedModels, threadLoader, type FolderLoader } from './server-load.ts';
import { listen, type Listening } from './server-listen.ts';
import type { WebClient } from './static.ts';
import { watchModels, type ModelWatch } from './watch.ts';
import { defaultWorkers, WorkerRuntime } from './worker-runtime.ts';

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
  /** ORT intra-op threads per session; 0 lets ORT pick (and splits the cores between several workers). @default 0 */
  intraOpNumThreads?: number;
  /**
   * Decode worker threads per model, language models included (see serve/worker-runtime.ts).
   * @default {@link defaultWorkers}
   */
  workers?: number;
  /** The model used when a request names none. */
  defaultModel?: string;
  limits?: Partial<RequestLimits>;
  /**
   * Dynamic batching (see serve/batcher.ts); `concurrency` defaults to max(2, workers), so every worker has a batch.
   */
  batching?: Partial<BatchingOptions>;
  /**
   * Served as static files under /reports/ (`frost report --out reports/NAME`). @default `reports` in the working
   * directory
   */
  reportsDir?: string;
  /** The browser client served at `/` (clients/web/build/web-client.ts). @default none: no page */
  web?: WebClient;
  /** Reload a model when its directory changes (see serve/watch.ts). @default false */
  watch?: boolean;
  /** How long {@link RunningServer.close} waits for in-flight requests before dropping them. @default 30000 */
  drainTimeoutMs?: number;
  /** Origins besides the server's own whose browsers may POST to it. @default none */
  allowedOrigins?: readonly string[];
  /** Most connections open at once; more are closed as they are accepted. @default {@link defaultMaxConnections} */
  maxConnections?: number;
  /** Where the JSON log lines go, one call per line. @default stderr */
  log?: (line: string) => void;
  /** Called after each `--watch` reload attempt (tests). */
  onReload?: (model: string, ok: boolean) => void;
}

/** A running server. */
export interface RunningServer {
  /** e.g. `http://127.0.0.1:8080` */
  url: string;
  registry: ModelRegistry;
  logger: Logger;
  /**
   * Graceful stop: refuses new connections, answers every request already received (up to
   * `drainTimeoutMs`), waits for decoding to end, and releases the models.
   */
  close(): Promise<void>;
}

/**
 * Loads the models and starts listening. A model folder that cannot be loaded is refused and listed
 * (serve/server-load.ts); the others are served.
 * @throws Error naming the directory or the refused folders when no model can be loaded, or the
 *   address when the port cannot be bound
 */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const logger = createLogger(opts.log);
  const port = opts.port ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`port must be an integer in 0..65535, got ${port}`);
  const host = opts.host ?? '127.0.0.1';

  const workers = opts.workers ?? defaultWorkers();
  const metrics = new ServeMetrics();
  const load = threadLoader({
    workers,
    device: opts.device,
    intraOpNumThreads: opts.intraOpNumThreads,
    logger,
    metrics,
  });
  const batching = {
    ...opts.batching,
    concurrency: opts.batching?.concurrency ?? Math.max(DEFAULT_BATCHING.concurrency, workers),
  };
  const models = await loadServedModels(opts.modelsDir, load, {
    defaultModel: opts.defaultModel,
    batching,
    metrics,
    logger,
  });
  const threadCounts = () =>
    models.registry
      .list()
      .map((m): [string, number] => [m.name, m.runtime instanceof WorkerRuntime ? m.runtime.threads.length : 0]);
  metrics.countDecodeThreads(threadCounts);
  let listening: Listening | undefined;
  const app = createApp({
    registry: models.registry,
    limits: opts.limits,
    reportsDir: opts.reportsDir,
    allowedOrigins: opts.allowedOrigins,
    web: opts.web,
    pool: models.pool,
    refused: () => models.refused,
    refusedOnDisk: (dir) => models.refusedOnDisk(dir),
    metrics,
    logger,
    notReady: () => {
      if (listening?.tracker.isDraining) return 'shutting down';
      if (!models.registry.list().length) return 'no model loaded';
      const down = threadCounts()
        .filter(([, n]) => n === 0)
        .map(([name]) => name);
      return down.length ? `no decode thread running for ${down.join(', ')} (restarting)` : undefined;
    },
    onInternalError: (err) => logger.error({ err: (err as Error)?.stack ?? String(err) }, 'internal error'),
  });

  const timeoutMs = opts.limits?.timeoutMs ?? DEFAULT_LIMITS.timeoutMs;
  const maxConnections = opts.maxConnections ?? defaultMaxConnections();
  try {
    listening = await listen(app, { port, host, timeoutMs, maxConnections, logger });
  } catch (err) {
    await models.close().catch(() => undefined);
    throw err;
  }
  const { tracker, url } = listening;
  const watch = opts.watch ? watchServedModels(opts.modelsDir, models, load, logger, opts.onReload) : undefined;

  logLoaded(models, logger);
  logger.info(
    { url, workers, batching: models.pool.options, watch: Boolean(opts.watch), maxConnections, timeoutMs },
    'frost serve listening',
  );

  let closing: Promise<void> | undefined;
  return {
    url,
    registry: models.registry,
    logger,
    close() {
      closing ??= (async () => {
        watch?.close();
        const inFlight = tracker.inFlight;
        const drained = await tracker.drain(opts.drainTimeoutMs ?? 30_000);
        await models.close();
        logger.info({ inFlight, drained }, 'frost serve stopped');
      })();
      return closing;
    },
  };
}

/**
 * `--watch`: a changed folder is reloaded as a model of the same family, and the old version retired; a folder
 * serving no model (refused at start-up, or new in a folder of models) is loaded as start-up loads one.
 */
function watchServedModels(
  modelsDir: string,
  models: ServedModels,
  load: FolderLoader,
  logger: Logger,
  onReload: ServerOptions['onReload'],
): ModelWatch {
  return watchModels(models.registry, {
    load: (dir) => loadFolder(dir, load, models.familyAt(dir)),
    retire: (old) => models.retire(old),
    logger,
    // A refused version is listed as start-up's refusals are, until a version loads again.
    onOutcome: (dir, refusal) => models.noteRefusal(modelsDir, dir, refusal),
    onReload,
    root: hasModelCard(modelsDir) ? undefined : modelsDir,
  });
}

/** One line per loaded model, in its family's words, saying whether requests naming none go to it. */
function logLoaded({ registry }: ServedModels, logger: Logger): void {
  for (const m of registry.list()) {
    const family = familyOf(m.runtime.card);
    const fields = { model: m.name, dir: m.dir, task: m.runtime.card.task };
    logger.info({ ...fields, default: m.name === registry.defaultName(family) }, servedFamily(family).loadedMessage);
  }
}
