/**
 * A model decoded by a small pool of worker threads, so the server's event loop only parses
 * requests (and preprocesses uploaded images) and writes answers: translation and caption models
 * and language models alike ({@link WorkerRuntime.load}).
 * onnxruntime-node runs a session synchronously on the calling thread, and on the main thread that
 * would stall health checks behind every decoder step.
 * Each thread holds its own sessions; a batch goes to the thread with the fewest batches in flight.
 * A thread that dies fails only its own batches (FROST_ERR_DECODER_CRASHED) and is replaced.
 */
import { availableParallelism } from 'node:os';
import type { SearchOptions } from '../core/decode/types.ts';
import type { Caption, CaptionHooks, CaptionOptions } from '../core/runtime/caption.ts';
import type { Completion, CompletionRequest, LmScore } from '../core/runtime/lm.ts';
import { type AnyCard, familyOf, type ModelFamily } from '../core/runtime/card-kinds.ts';
import type { LmCard } from '../core/runtime/lm-card.ts';
import type { Device } from '../core/runtime/load-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { TranslateHooks, Translation } from '../core/runtime/seq2seq.ts';
import { DecodeThread, type DecodeThreadOptions } from './decode-thread.ts';
import type { LmCompleteHooks, LmServeHooks } from './lm-model-runtime.ts';
import { servedFamily } from './served-families.ts';
import { readSharedGraphs } from './shared-graphs.ts';

/** Options of {@link WorkerRuntime.start}. */
export interface WorkerRuntimeOptions {
  /** Decode threads for the model. @default {@link defaultWorkers} */
  workers?: number;
  /** @default 'cpu' */
  device?: Device;
  /**
   * ORT intra-op threads per session; 0 lets ORT pick with one worker, and splits the cores between several. @default 0
   */
  intraOpNumThreads?: number;
  /** Notes from loading (the CUDA fallback of `--device auto`). */
  log?(message: string): void;
  /** A thread died (`reason` says how); its batches were failed and a replacement is starting. */
  onCrash?(reason: string): void;
  /** A replacement thread is up (no argument) or could not start (`error`; it is retried with a backoff). */
  onRestart?(error?: string): void;
}

/**
 * One decode thread per 4 cores, from 1 to 4: each thread's sessions use several cores, and the
 * main thread keeps some for HTTP. On a 2-core machine that is one thread beside the event loop.
 */
export function defaultWorkers(cores = availableParallelism()): number {
  return Math.max(1, Math.min(4, Math.floor(cores / 4)));
}

/** Backoff between failed restarts: 1 s, doubling, at most 30 s. */
const RESTART_BACKOFF_MS = { first: 1000, max: 30_000 };

/**
 * `WorkerRuntime<ModelCard>` (from {@link WorkerRuntime.start}) is a `ModelRuntime` (model-runtime.ts);
 * `WorkerRuntime<LmCard>` (from {@link WorkerRuntime.startLm}) is an `LmModelRuntime` (lm-model-runtime.ts).
 */
export class WorkerRuntime<C extends AnyCard = ModelCard> {
  private readonly slots: Array<DecodeThread | undefined>;
  private readonly waiters: Array<{ resolve(thread: DecodeThread): void; reject(err: unknown): void }> = [];
  private readonly restarts = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly cardJson: string;
  private closed = false;

  private constructor(
    /** The model directory every thread loads. */
    readonly dir: string,
    readonly card: C,
    threads: DecodeThread[],
    private readonly threadOptions: DecodeThreadOptions,
    private readonly opts: WorkerRuntimeOptions,
  ) {
    this.cardJson = JSON.stringify(card);
    this.slots = [...threads];
    // A thread that died between loading and now missed its onCrash (nobody owned it yet).
    this.slots.forEach((t, slot) => {
      if (!t?.alive) this.replace(slot);
    });
  }

  /**
   * Starts the threads and loads the model `dir` in each, of whichever kind its card says
   * (core/runtime/card-kinds.ts), or only of `family` when given; resolves once all are ready, so a
   * caller swapping models (`--watch`) only ever swaps in a complete, validated pool.
   * @throws Error with the loader's message (naming a missing or corrupt file) or naming the model's
   *   kind when it is not of `family`; RangeError for bad options
   */
  static async load<C extends AnyCard = AnyCard>(
    dir: string,
    options: WorkerRuntimeOptions = {},
    family?: ModelFamily,
  ): Promise<WorkerRuntime<C>> {
    const cores = availableParallelism();
    const workers = options.workers ?? defaultWorkers(cores);
    if (!Number.isInteger(workers) || workers < 1)
      throw new RangeError(`workers must be an integer >= 1, got ${String(options.workers)}`);
    const intra = options.intraOpNumThreads ?? 0;
    if (!Number.isInteger(intra) || intra < 0)
      throw new RangeError(`intraOpNumThreads must be an integer >= 0, got ${String(intra)}`);
    let runtime: WorkerRuntime<C> | undefined;
    const graphs = await readSharedGraphs(dir);
    const threadOptions: DecodeThreadOptions = {
      graphs,
      device: options.device,
      // Several threads each letting ORT take every core would oversubscribe the machine.
      intraOpNumThreads: intra === 0 && workers > 1 ? Math.max(1, Math.floor(cores / workers)) : intra,
      log: options.log,
      onCrash: (reason, thread) => runtime?.crashed(thread, reason),
    };
    const started = await Promise.allSettled(
      Array.from({ length: workers }, () => DecodeThread.start(dir, threadOptions)),
    );
    const threads = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failure = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    const mixed = threads.some((t) => JSON.stringify(t.card) !== JSON.stringify(threads[0].card));
    const card = threads[0]?.card as C;
    if (failure || mixed || (family && familyOf(card) !== family)) {
      await Promise.all(threads.map((t) => t.release()));
      if (failure) throw failure.reason;
      throw new Error(
        mixed
          ? `${dir}: the model changed while it was loading; try again`
          : `${dir}: a ${card.task} model, not ${servedFamily(family!).noun}`,
      );
    }
    runtime = new WorkerRuntime<C>(dir, card, threads, threadOptions, options);
    return runtime;
  }

  /** {@link load} for a translation or caption model only. */
  static start(dir: string, options: WorkerRuntimeOptions = {}): Promise<WorkerRuntime<ModelCard>> {
    return WorkerRuntime.load<ModelCard>(dir, options, 'seq2seq');
  }

  /** {@link load} for a language model only (`/v1/score`, `/v1/complete`). */
  static startLm(dir: string, options: WorkerRuntimeOptions = {}): Promise<WorkerRuntime<LmCard>> {
    return WorkerRuntime.load<LmCard>(dir, options, 'lm');
  }

  /** The running threads (diagnostics: `worker.threadId`, `worker.performance.eventLoopUtilization()`). */
  get threads(): DecodeThread[] {
    return this.slots.filter((t): t is DecodeThread => Boolean(t?.alive));
  }

  /** Decodes on the least busy thread; waits for a replacement when every thread is down. */
  async translateEach(
    texts: readonly string[],
    options: SearchOptions = {},
    hooks: TranslateHooks = {},
  ): Promise<Translation[]> {
    return (await this.pick()).translateEach(texts, options, hooks);
  }

  /** Captions on the least busy thread (transferring the images' buffers); waits like translateEach. */
  async captionEach(
    images: readonly Float32Array[],
    options: CaptionOptions = {},
    hooks: CaptionHooks = {},
  ): Promise<Caption[]> {
    return (await this.pick()).captionEach(images, options, hooks);
  }

  /** Scores on the least busy thread (language models); waits like translateEach. */
  async scoreEach(texts: readonly string[], hooks: LmServeHooks<LmScore> = {}): Promise<LmScore[]> {
    return (await this.pick()).scoreEach(texts, hooks);
  }

  /** Completes on the least busy thread (language models); a seeded row is the same on any thread. */
  async completeEach(requests: readonly CompletionRequest[], hooks: LmCompleteHooks = {}): Promise<Completion[]> {
    return (await this.pick()).completeEach(requests, hooks);
  }

  /** Lets the batches in flight finish, then ends every thread; pending restarts are cancelled. */
  async release(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w.reject(new Error(`${this.card.name}: the model was released`));
    await Promise.all([...this.restarts]);
    await Promise.all(this.slots.map((t) => t?.release()));
  }

  private pick(): Promise<DecodeThread> {
    let best: DecodeThread | undefined;
    for (const t of this.slots) if (t?.alive && (!best || t.inFlight < best.inFlight)) best = t;
    if (best) return Promise.resolve(best);
    if (this.closed) return Promise.reject(new Error(`${this.card.name}: the model was released`));
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private crashed(thread: DecodeThread, reason: string): void {
    const slot = this.slots.indexOf(thread);
    if (slot < 0 || this.closed) return;
    this.opts.onCrash?.(reason);
    this.replace(slot);
  }

  /** Starts a thread for `slot`: now after a crash, then with a growing backoff while starting fails. */
  private replace(slot: number, attempt = 0): void {
    this.slots[slot] = undefined;
    const delay = attempt === 0 ? 0 : Math.min(RESTART_BACKOFF_MS.max, RESTART_BACKOFF_MS.first * 2 ** (attempt - 1));
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const restart = this.restart(slot, attempt).finally(() => this.restarts.delete(restart));
      this.restarts.add(restart);
    }, delay);
    this.timers.add(timer);
  }

  private async restart(slot: number, attempt: number): Promise<void> {
    if (this.closed) return;
    let thread: DecodeThread | undefined;
    try {
      thread = await DecodeThread.start(this.dir, this.threadOptions);
      if (JSON.stringify(thread.card) !== this.cardJson) {
        // Mixing two versions of a model across threads would make answers depend on the thread.
        throw new Error(
          `${this.dir} now holds another version of '${this.card.name}'; not mixing versions (reload it with --watch, or restart)`,
        );
      }
    } catch (err) {
      await thread?.release();
      if (this.closed) return;
      this.opts.onRestart?.((err as Error).message);
      this.replace(slot, attempt + 1);
      return;
    }
    if (this.closed) {
      await thread.release();
      return;
    }
    this.slots[slot] = thread;
    this.opts.onRestart?.();
    for (const w of this.waiters.splice(0)) w.resolve(thread);
  }
}
