import type { Device } from '../core/runtime/load-node.ts';
import { createApp } from './app.ts';
import { LanguageModels } from './lm-models.ts';
import { DEFAULT_BATCHING, type BatchingOptions } from './batcher.ts';
import { BatcherPool } from './batcher-pool.ts';
import { createLogger, type Logger } from './logger.ts';
import { ServeMetrics } from './metrics.ts';
import { ModelRegistry } from './model-registry.ts';
import { defaultMaxConnections } from './connection-limits.ts';
import { DEFAULT_LIMITS, type RequestLimits } from './schemas.ts';
import type { RequestTracker } from './shutdown.ts';
import { listen, type Listening } from './server-listen.ts';
import type { WebClient } from './static.ts';
import { watchModels, type ModelWatch } from './watch.ts';
import { defaultWorkers, WorkerRuntime, type WorkerRuntimeOptions } from './worker-runtime.ts';

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
 * Loads the models and starts listening.
 * @throws Error naming the directory or file when a model cannot be loaded, or the address when
 *   the port cannot be bound
 */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const logger = createLogger(opts.log);
  const port = opts.port ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`port must be an integer in 0..65535, got ${port}`);
  const host = opts.host ?? '127.0.0.1';

  const workers = opts.workers ?? defaultWorkers();
  const metrics = new ServeMetrics();
  /** Decode threads for one model directory, of either kind; crashes and restarts are counted and logged. */
  const threadsFor = <R extends { card: { name: string } }>(
    start: (dir: string, options: WorkerRuntimeOptions) => Promise<R>,
  ) =>
    async function load(dir: string): Promise<R> {
      let model = dir;
      const runtime = await start(dir, {
        workers,
        device: opts.device,
        intraOpNumThreads: opts.intraOpNumThreads,
        log: (message) => logger.warn(message),
        onCrash: (reason) => {
          metrics.decodeThreadCrashes.inc({ model });
          logger.error(
            { model, dir, reason },
            'decode thread crashed: its requests failed with FROST_ERR_DECODER_CRASHED; restarting it',
          );
        },
        onRestart: (error) =>
          error
            ? logger.error({ model, dir, err: error }, 'restarting a decode thread failed; retrying')
            : logger.info({ model, dir }, 'decode thread restarted'),
      });
      model = runtime.card.name;
      return runtime;
    };
  const load = threadsFor((dir, options) => WorkerRuntime.start(dir, options));
  const loadLm = threadsFor((dir, options) => WorkerRuntime.startLm(dir, options));
  const batching = {
    ...opts.batching,
    concurrency: opts.batching?.concurrency ?? Math.max(DEFAULT_BATCHING.concurrency, workers),
  };
  const languageModels = await LanguageModels.load(opts.modelsDir, {
    loader: loadLm,
    defaultModel: opts.defaultModel,
    batching,
    observer: (model) => metrics.observer(model),
  });
  // --default-model may name a language model; the seq2seq registry then has no default of its own.
  const seq2seqDefault = languageModels.names.includes(opts.defaultModel ?? '') ? undefined : opts.defaultModel;
  let registry: ModelRegistry;
  try {
    registry = await ModelRegistry.load(opts.modelsDir, { defaultModel: seq2seqDefault, loader: load });
  } catch (err) {
    await languageModels.close().catch(() => undefined);
    throw err;
  }
  const threadCounts = () =>
    [...registry.list(), ...languageModels.list()].map((m): [string, number] => [
      m.name,
      m.runtime instanceof WorkerRuntime ? m.runtime.threads.length : 0,
    ]);
  metrics.countDecodeThreads(threadCounts);
  const pool = new BatcherPool(registry, batching, metrics);
  let tracker: RequestTracker | undefined;
  let listening: Listening;
  const app = createApp({
    registry,
    limits: opts.limits,
    reportsDir: opts.reportsDir,
    allowedOrigins: opts.allowedOrigins,
    web: opts.web,
    languageModels,
    pool,
    metrics,
    logger,
    notReady: () => {
      if (tracker?.isDraining) return 'shutting down';
      if (!registry.names.length && !languageModels.names.length) return 'no model loaded';
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
    tracker = listening.tracker;
  } catch (err) {
    await registry.close().catch(() => undefined);
    await languageModels.close().catch(() => undefined);
    throw err;
  }

  const watchers: ModelWatch[] = [];
  if (opts.watch) {
    watchers.push(
      watchModels(languageModels, {
        load: loadLm,
        retire: async (old) => {
          await languageModels.idle(old);
          await old.release();
        },
        logger,
        onReload: opts.onReload,
      }),
    );
    const watcher = watchModels(registry, {
      load,
      retire: async (old) => {
        await pool.idle(old);
        await old.release();
      },
      logger,
      onReload: opts.onReload,
    });
    watchers.push(watcher);
  }

  const url = listening.url;
  for (const m of registry.list())
    logger.info({ model: m.name, dir: m.dir, default: m.name === registry.defaultName }, 'model loaded');
  for (const name of languageModels.names)
    logger.info(
      { model: name, dir: languageModels.get(name).dir, task: 'lm', default: name === languageModels.defaultName },
      'language model loaded (POST /v1/complete, /v1/score)',
    );
  logger.info(
    { url, workers, batching: pool.options, watch: Boolean(opts.watch), maxConnections, timeoutMs },
    'frost serve listening',
  );

  let closing: Promise<void> | undefined;
  return {
    url,
    registry,
    logger,
    close() {
      closing ??= (async () => {
        for (const w of watchers) w.close();
        const inFlight = tracker.inFlight;
        const drained = await tracker.drain(opts.drainTimeoutMs ?? 30_000);
        // Requests whose clients left may still be decoding; sessions must outlive their runs.
        await pool.idle();
        await languageModels.close();
        await registry.close();
        logger.info({ inFlight, drained }, 'frost serve stopped');
      })();
      return closing;
    },
  };
}
