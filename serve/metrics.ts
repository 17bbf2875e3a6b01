/**
 * The server's Prometheus metrics (`GET /metrics`). Each server has its own registry, so several
 * servers in one process (tests, embedders) do not share or clash over counters.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BatchObserver } from './batcher.ts';

/** The metric objects, named `frost_*`. */
export class ServeMetrics {
  readonly registry = new Registry();
  /** Seconds from request arrival to response end, by route and status. */
  readonly requestDuration = new Histogram({
    name: 'frost_request_duration_seconds',
    help: 'HTTP request latency, from arrival to the end of the response',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  /** Requests received and not yet answered. */
  readonly inFlight = new Gauge({
    name: 'frost_requests_in_flight',
    help: 'HTTP requests received and not yet answered',
    registers: [this.registry],
  });
  /** Inputs (texts or images) per decoded batch. */
  readonly batchSize = new Histogram({
    name: 'frost_batch_size',
    help: 'Inputs (texts or images) per decoded batch',
    labelNames: ['model'] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  });
  /** Requests per decoded batch (how many requests dynamic batching merged). */
  readonly batchRequests = new Histogram({
    name: 'frost_batch_requests',
    help: 'Requests merged into one decoded batch',
    labelNames: ['model'] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
    registers: [this.registry],
  });
  /** Requests waiting for a batch. */
  readonly queueDepth = new Gauge({
    name: 'frost_queue_depth',
    help: 'Requests waiting to be decoded',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  /** Output tokens produced (rate() of it is tokens/s). */
  readonly generatedTokens = new Counter({
    name: 'frost_generated_tokens_total',
    help: 'Output tokens of returned translations and captions (best hypothesis, without </s>)',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  /** Decode worker threads running per model; below the configured count while one restarts. */
  readonly decodeThreads = new Gauge({
    name: 'frost_decode_threads',
    help: 'Decode worker threads running, per model',
    labelNames: ['model'] as const,
    registers: [this.registry],
    collect: () => {
      this.decodeThreads.reset();
      for (const [model, n] of this.threadCounts()) this.decodeThreads.set({ model }, n);
    },
  });
  /** Decode threads that died unexpectedly (each failed its in-flight requests with FROST_ERR_DECODER_CRASHED). */
  readonly decodeThreadCrashes = new Counter({
    name: 'frost_decode_thread_crashes_total',
    help: 'Decode worker threads that stopped unexpectedly and were restarted',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  /** Error responses by catalogue code. */
  readonly errors = new Counter({
    name: 'frost_errors_total',
    help: 'Error responses by FROST_ERR_* code',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  /** Event streams (`?stream=1`) whose client went away before the answer: their decoding was cancelled. */
  readonly streamsCancelled = new Counter({
    name: 'frost_streams_cancelled_total',
    help: 'Streamed requests (?stream=1) the client closed before their result; decoding was cancelled',
    labelNames: ['route'] as const,
    registers: [this.registry],
  });

  /** Read at scrape time, so a reloaded or restarting model is counted as it is now. */
  private threadCounts: () => Iterable<[model: string, threads: number]> = () => [];

  constructor(opts: { processMetrics?: boolean } = {}) {
    // Process metrics (RSS, event-loop lag, GC) are what an operator looks at first under load.
    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'frost_' });
  }

  /** Where `frost_decode_threads` reads its values from. */
  countDecodeThreads(read: () => Iterable<[model: string, threads: number]>): void {
    this.threadCounts = read;
  }

  /** The batcher hooks of one model. */
  observer(model: string): BatchObserver {
    return {
      batch: (texts, requests) => {
        this.batchSize.observe({ model }, texts);
        this.batchRequests.observe({ model }, requests);
      },
      queueDepth: (depth) => this.queueDepth.set({ model }, depth),
      tokens: (count) => this.generatedTokens.inc({ model }, count),
    };
  }
}
