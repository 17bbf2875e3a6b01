/**
 * Dynamic batching for one model: requests that arrive within a few milliseconds of each other are
 * decoded as one batch (one encoder run, one decoder-step run per step for the rows of all of them),
 * which is where a server's throughput comes from: a decoder step costs nearly the same for 1 row
 * as for 64. Each request is answered as soon as its own inputs are done, not when the batch is.
 * What an input is (a text, an image) and how a batch is decoded is a {@link BatchKind}
 * (serve/batch-kinds.ts); the queueing here is the same for every kind.
 */
import { cardKinds, type ModelFamily } from '../core/runtime/card-kinds.ts';
import { QueueFullError } from './decode-errors.ts';
import type { ModelRuntime } from './model-runtime.ts';

/** Batching settings (per model). */
export interface BatchingOptions {
  /**
   * Most inputs (texts, images) decoded in one batch; 1 turns batching off. A larger single request still runs, alone.
   * @default 64
   */
  maxBatch: number;
  /**
   * How long a request waits for others before its batch starts, while another batch is decoding
   * (an idle model starts a lone request at once). @default 5
   */
  maxWaitMs: number;
  /** Most requests waiting (not yet decoding); past it requests get 503 FROST_ERR_OVERLOADED. @default 256 */
  maxQueue: number;
  /**
   * Batches decoding at once. With several decode threads each takes one (the least busy); on
   * one thread their steps interleave, so a request arriving during a long batch need not wait for
   * all of it. `frost serve` raises the default to its thread count. @default 2
   */
  concurrency: number;
}

export const DEFAULT_BATCHING: Readonly<BatchingOptions> = {
  maxBatch: 64,
  maxWaitMs: 5,
  maxQueue: 256,
  concurrency: 2,
};

/** What the batcher reports, for metrics. */
export interface BatchObserver {
  /** A batch started with this many inputs (from `requests` requests). */
  batch?(inputs: number, requests: number): void;
  /** The waiting queue's length changed. */
  queueDepth?(depth: number): void;
  /** An input was decoded into this many output tokens. */
  tokens?(count: number): void;
}

/** Per-input callbacks of one batch, numbered across the batch. */
export interface BatchHooks<Out> {
  /** Inputs whose best prefix is wanted through `onPrefix` (kinds that cannot stream ignore it). */
  prefixInputs: ReadonlySet<number>;
  onPrefix(input: number, text: string): void;
  onDone(input: number, result: Out): void;
  /** Whether input's request has gone (aborted), so kinds that can drop a row mid-batch may. */
  cancelled(input: number): boolean;
  /**
   * Calls `listener` with each input whose request goes (aborts) from now on while the batch
   * decodes: the push form of {@link cancelled}, for a batch decoding in another thread, which
   * cannot ask.
   */
  onCancel(listener: (input: number) => void): void;
}

/**
 * One kind of request a model decodes in batches: translation (texts), captioning (images), scoring and
 * completion (language models). `Opts` are the search settings of a request.
 */
export interface BatchKind<In, Out, Opts, R = ModelRuntime> {
  /**
   * The task whose models answer it (core/runtime/card-kinds.ts). Its requests name their model among the models
   * of that task's family ({@link kindFamily}), and a route refuses a model of the family's other tasks.
   */
  readonly task: string;
  /** Requests batch together only when their keys are equal: search settings are per call. */
  key(options: Opts): string;
  /** Decodes `inputs` as one batch with `runtime`, reporting each input through `hooks.onDone`. */
  decode(runtime: R, inputs: In[], options: Opts, hooks: BatchHooks<Out>): Promise<unknown>;
  /** Output tokens of a result, for the metrics. */
  tokens(result: Out): number;
  /**
   * The text a streamed input's prefixes end with: a beam's last live prefix need not be its best
   * finished hypothesis. Kinds that do not stream leave it out.
   */
  finalText?(result: Out): string;
}

/** The family of model that answers requests of `kind`: the one its task belongs to. */
export function kindFamily(kind: { readonly task: string }): ModelFamily {
  return cardKinds.get(kind.task).family;
}

/** Per-request options of {@link Batcher.submit}. */
export interface SubmitOptions {
  /** Aborting rejects the request with the signal's reason and drops it from the queue if it is still waiting. */
  signal?: AbortSignal;
  /** Streams the best prefix of input `index` after every decoder step (kinds that stream). */
  onPrefix?(index: number, text: string): void;
}

interface Job<In, Out, Opts> {
  inputs: readonly In[];
  options: Opts;
  /** Requests are only batched with requests of equal search settings: search options are per call. */
  key: string;
  enqueuedAt: number;
  onPrefix?: (index: number, text: string) => void;
  results: (Out | undefined)[];
  remaining: number;
  settled: boolean;
  resolve(value: Out[]): void;
  reject(err: unknown): void;
  cleanup(): void;
  /** Set while the job decodes: tells the batch that the job's inputs have gone. */
  cancelled?: () => void;
}

/** Waits for the request, gathers batches and decodes them with the current runtime of one model. */
export class Batcher<In, Out, Opts, R = ModelRuntime> {
  private readonly queue: Job<In, Out, Opts>[] = [];
  private running = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Batches in flight per runtime, so a replaced runtime is released only once it is idle. */
  private readonly busy = new Map<R, number>();
  private readonly idleWaiters: Array<() => void> = [];

  /**
   * @param runtime returns the runtime to decode the next batch with (read at dispatch, so a
   *   reloaded model takes over from the next batch on)
   */
  constructor(
    private readonly kind: BatchKind<In, Out, Opts, R>,
    private readonly runtime: () => R,
    private readonly opts: BatchingOptions = DEFAULT_BATCHING,
    private readonly observer: BatchObserver = {},
  ) {}

  /** Requests waiting to be decoded. */
  get depth(): number {
    return this.queue.length;
  }

  /**
   * Queues `inputs` for decoding.
   * @throws QueueFullError (synchronously; FROST_ERR_OVERLOADED over HTTP) when the queue is full, so the caller
   *   can answer 503 before it commits to a response format
   * @returns a promise of one result per input, in order
   */
  submit(inputs: readonly In[], options: Opts, sub: SubmitOptions = {}): Promise<Out[]> {
    if (this.queue.length >= this.opts.maxQueue) {
      throw new QueueFullError(this.opts.maxQueue);
    }
    const { signal } = sub;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Out[]>((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(job);
        if (i >= 0) {
          this.queue.splice(i, 1);
          this.observer.queueDepth?.(this.queue.length);
        }
        // A job already decoding is told to its batch: kinds that can drop rows mid-batch do;
        // the others finish them, and the result is discarded.
        settle(() => reject(signal!.reason));
        job.cancelled?.();
      };
      const settle = (fn: () => void) => {
        if (job.settled) return;
        job.settled = true;
        job.cleanup();
        fn();
      };
      const job: Job<In, Out, Opts> = {
        inputs,
        options,
        key: this.kind.key(options),
        enqueuedAt: performance.now(),
        onPrefix: sub.onPrefix,
        results: new Array(inputs.length),
        remaining: inputs.length,
        settled: false,
        resolve: (v) => settle(() => resolve(v)),
        reject: (e) => settle(() => reject(e)),
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(job);
      this.observer.queueDepth?.(this.queue.length);
      this.schedule();
    });
  }

  /** Resolves once no batch decodes with `runtime` (immediately when none does). */
  idle(runtime?: R): Promise<void> {
    const isIdle = () => (runtime ? !this.busy.get(runtime) : this.running === 0 && this.queue.length === 0);
    if (isIdle()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (isIdle()) resolve();
        else this.idleWaiters.push(check);
      };
      this.idleWaiters.push(check);
    });
  }

  /** Starts a batch when one is due; otherwise arms the wait timer of the oldest request. */
  private schedule(): void {
    while (this.running < this.opts.concurrency && this.queue.length > 0) {
      const head = this.queue[0];
      const waiting = this.queue.reduce((n, j) => (j.key === head.key ? n + j.inputs.length : n), 0);
      // Waiting only pays when other requests are about: with nothing decoding, a lone request goes
      // at once (no added latency at low load); while a batch decodes, arrivals gather for the next.
      // The wait counts from the oldest request's arrival, so one that waited for a slot goes at once.
      const wait = head.enqueuedAt + this.opts.maxWaitMs - performance.now();
      if (this.running > 0 && waiting < this.opts.maxBatch && wait > 0) {
        this.timer ??= setTimeout(() => {
          this.timer = undefined;
          this.dispatch();
          this.schedule();
        }, wait);
        return;
      }
      this.dispatch();
    }
  }

  /** Takes the oldest request and every later one with the same settings that fits, and decodes them. */
  private dispatch(): void {
    if (this.queue.length === 0 || this.running >= this.opts.concurrency) return;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const head = this.queue[0];
    const jobs: Job<In, Out, Opts>[] = [];
    let size = 0;
    for (let i = 0; i < this.queue.length;) {
      const job = this.queue[i];
      // The head always goes, even when it alone is larger than maxBatch (its size is capped by the request limits).
      if (job.key === head.key && (jobs.length === 0 || size + job.inputs.length <= this.opts.maxBatch)) {
        jobs.push(job);
        size += job.inputs.length;
        this.queue.splice(i, 1);
      } else {
        i++;
      }
    }
    this.observer.queueDepth?.(this.queue.length);
    this.observer.batch?.(size, jobs.length);
    const runtime = this.runtime();
    this.running++;
    this.busy.set(runtime, (this.busy.get(runtime) ?? 0) + 1);
    void this.decode(runtime, jobs).finally(() => {
      this.running--;
      const left = (this.busy.get(runtime) ?? 1) - 1;
      if (left) this.busy.set(runtime, left);
      else this.busy.delete(runtime);
      const waiters = this.idleWaiters.splice(0);
      for (const w of waiters) w();
      this.schedule();
    });
  }

  /**
   * Decodes the inputs of `jobs` not yet done as one batch. A batch that fails may have failed for one request's
   * input alone (a token its graph cannot take), so no request fails because of another: the requests still
   * waiting are split in halves and each half decodes again, down to single requests, and only a request that
   * fails on its own gets the error. One bad request among n costs about 2·log2(n) extra decodes.
   */
  private async decode(runtime: R, jobs: Job<In, Out, Opts>[]): Promise<void> {
    // Flatten: input b of the batch is input `offset[b]` of job `owner[b]`. An input already done (by a batch
    // that failed after it) keeps its result: `results` starts as holes, filled by onDone.
    const inputs: In[] = [];
    const owner: Job<In, Out, Opts>[] = [];
    const offset: number[] = [];
    const prefixInputs = new Set<number>();
    const cancelListeners: Array<(input: number) => void> = [];
    for (const job of jobs) {
      const rows: number[] = [];
      job.inputs.forEach((input, i) => {
        if (i in job.results) return;
        if (job.onPrefix) prefixInputs.add(inputs.length);
        rows.push(inputs.length);
        inputs.push(input);
        owner.push(job);
        offset.push(i);
      });
      job.cancelled = () => {
        for (const b of rows) for (const listener of cancelListeners) listener(b);
      };
    }
    try {
      await this.kind.decode(runtime, inputs, jobs[0].options, {
        prefixInputs,
        onPrefix: (b, text) => {
          const job = owner[b];
          if (!job.settled) job.onPrefix?.(offset[b], text);
        },
        cancelled: (b) => owner[b].settled,
        onCancel: (listener) => cancelListeners.push(listener),
        onDone: (b, result) => {
          const job = owner[b];
          this.observer.tokens?.(this.kind.tokens(result));
          job.results[offset[b]] = result;
          if (job.onPrefix && !job.settled && this.kind.finalText) job.onPrefix(offset[b], this.kind.finalText(result));
          if (--job.remaining === 0) job.resolve(job.results as Out[]);
        },
      });
    } catch (err) {
      const waiting = jobs.filter((job) => !job.settled);
      if (waiting.length <= 1) {
        for (const job of waiting) job.reject(err);
        return;
      }
      const half = Math.ceil(waiting.length / 2);
      for (const part of [waiting.slice(0, half), waiting.slice(half)]) {
        this.observer.batch?.(
          part.reduce((n, job) => n + job.remaining, 0),
          part.length,
        );
        await this.decode(runtime, part);
      }
    } finally {
      for (const job of jobs) job.cancelled = undefined;
    }
  }
}
