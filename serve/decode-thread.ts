/**
 * One decode thread with one model loaded (serve/decode-worker.ts on the other side): it takes
 * batches (texts to translate, images to caption, texts to score or prompts to complete), routes
 * the thread's per-input messages to each batch's hooks, and, when the thread dies unexpectedly,
 * fails every batch it held with a DecoderCrashedError (FROST_ERR_DECODER_CRASHED over HTTP)
 * instead of leaving them hanging.
 */
import { Worker } from 'node:worker_threads';
import type { SearchOptions } from '../core/decode/types.ts';
import type { Caption, CaptionHooks, CaptionOptions } from '../core/runtime/caption.ts';
import type { Completion, CompletionRequest, LmScore } from '../core/runtime/lm.ts';
import type { LmCard } from '../core/runtime/lm-card.ts';
import type { Device } from '../core/runtime/load-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { TranslateHooks, Translation } from '../core/runtime/seq2seq.ts';
import { DecoderCrashedError } from './decode-errors.ts';
import type { LmCompleteHooks, LmServeHooks } from './lm-model-runtime.ts';
import type { DecodeWorkerData, FromWorker, ToWorker } from './worker-protocol.ts';

const BOOT = new URL('./tsx-worker-boot.js', import.meta.url);
const ENTRY = new URL('./decode-worker.ts', import.meta.url).href;

/** Options of {@link DecodeThread.start}. */
export interface DecodeThreadOptions {
  /** @default 'cpu' */
  device?: Device;
  /** ORT intra-op threads per session; 0 lets ORT pick. @default 0 */
  intraOpNumThreads?: number;
  /** Notes from loading (the CUDA fallback of `--device auto`). */
  log?(message: string): void;
  /** The thread ended without being released; its batches have been failed already. */
  onCrash?(reason: string, thread: DecodeThread): void;
  /** The model's graphs, read once by this process and shared (serve/shared-graphs.ts). @default read by the thread */
  graphs?: ReadonlyMap<string, Uint8Array>;
}

/** A batch in the thread; its results arrive one input at a time. */
interface Call {
  onPrefix?(input: number, text: string): void;
  onDone?(input: number, result: unknown): void;
  settled: Promise<unknown>;
  results: unknown[];
  resolve(results: unknown[]): void;
  reject(err: unknown): void;
}

/** Created by {@link DecodeThread.start}; serve/worker-runtime.ts keeps a pool of them per model. */
export class DecodeThread {
  private readonly calls = new Map<number, Call>();
  private nextId = 1;
  private releasing = false;
  private ended = false;
  private crashReason: string | undefined;
  private readonly exit: Promise<void>;

  private constructor(
    /** The thread, for diagnostics (`threadId`, `performance.eventLoopUtilization()`). */
    readonly worker: Worker,
    /** A translation or caption model's card, or a language model's. */
    readonly card: ModelCard | LmCard,
    private readonly opts: DecodeThreadOptions,
  ) {
    worker.on('message', (msg: FromWorker) => this.receive(msg));
    worker.on('error', (err) => (this.crashReason ??= `uncaught ${err.name}: ${err.message}`));
    this.exit = new Promise((resolve) =>
      worker.once('exit', (code) => {
        this.ended = true;
        this.failAll(this.crashReason ?? `the thread exited with code ${code}`);
        resolve();
      }),
    );
  }

  /**
   * Starts a thread and loads `dir` in it.
   * @throws Error with the loader's message (naming the file of a missing or corrupt model)
   */
  static start(dir: string, opts: DecodeThreadOptions = {}): Promise<DecodeThread> {
    const workerData: DecodeWorkerData = {
      dir,
      device: opts.device ?? 'cpu',
      intraOpNumThreads: opts.intraOpNumThreads ?? 0,
      ...(opts.graphs ? { graphs: opts.graphs } : {}),
    };
    const worker = new Worker(BOOT, { workerData: { ...workerData, entry: ENTRY } });
    return new Promise<DecodeThread>((resolve, reject) => {
      // Only these listeners go: Worker keeps internal ones of its own (removeAllListeners would drop them).
      const detach = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const fail = (err: Error) => {
        detach();
        // Safe only because the thread is not inside an onnxruntime call now (it gave up loading,
        // or is gone): terminating one mid-run aborts the whole process.
        void worker.terminate();
        reject(err);
      };
      const onMessage = (msg: FromWorker) => {
        if (msg.type === 'log') opts.log?.(msg.message);
        else if (msg.type === 'load-failed') fail(new Error(msg.message));
        else if (msg.type === 'ready') {
          detach();
          resolve(new DecodeThread(worker, msg.card, opts));
        }
      };
      const onError = (err: Error) =>
        fail(new Error(`${dir}: the decode thread failed while loading: ${err.message}`, { cause: err }));
      const onExit = (code: number) =>
        fail(new Error(`${dir}: the decode thread exited with code ${code} while loading`));
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
  }

  /** Batches sent and not yet finished. */
  get inFlight(): number {
    return this.calls.size;
  }

  /** Whether the thread still runs and takes batches. */
  get alive(): boolean {
    return !this.ended && !this.releasing;
  }

  /** Decodes a batch in the thread; same contract as `Seq2SeqRuntime.translateEach`. */
  translateEach(
    texts: readonly string[],
    options: SearchOptions = {},
    hooks: TranslateHooks = {},
  ): Promise<Translation[]> {
    const { logitsProcessors, ...plain } = options;
    if (logitsProcessors?.length)
      return Promise.reject(new TypeError('translateEach: logitsProcessors cannot cross to a decode thread'));
    return this.call<Translation>('translateEach', hooks, (id) => ({
      msg: { type: 'translate', id, texts: [...texts], options: plain, prefixInputs: [...(hooks.prefixInputs ?? [])] },
    }));
  }

  /**
   * Captions a batch in the thread; same contract as `CaptionRuntime.captionEach`. The images'
   * buffers are transferred, not copied (a batch of 64 128² images is 12 MB), so the arrays are
   * detached here once this is called.
   */
  captionEach(
    images: readonly Float32Array[],
    options: CaptionOptions = {},
    hooks: CaptionHooks = {},
  ): Promise<Caption[]> {
    const list = [...images];
    const bad = list.findIndex((im) => !(im instanceof Float32Array));
    if (bad >= 0) return Promise.reject(new TypeError(`captionEach: images[${bad}] must be a Float32Array`));
    // A buffer listed twice makes postMessage throw; two images may share one (subarrays).
    const transfer = [...new Set(list.map((im) => im.buffer as ArrayBuffer))];
    return this.call<Caption>('captionEach', hooks, (id) => ({
      msg: { type: 'caption', id, images: list, options: { beam: options.beam, maxLength: options.maxLength } },
      transfer,
    }));
  }

  /** Scores texts in the thread; same contract as `LmRuntime.scoreEach` (rows cancelled through `hooks.onCancel`). */
  scoreEach(texts: readonly string[], hooks: LmServeHooks<LmScore> = {}): Promise<LmScore[]> {
    const rows = texts.length;
    return this.lmCall<LmScore>('scoreEach', rows, hooks, (id) => ({ type: 'score', id, texts: [...texts] }));
  }

  /**
   * Completes prompts in the thread; same contract as `LmRuntime.completeEach`. With `onToken`,
   * each token of the `streamRows` (all rows when absent) comes back as a message of its own.
   */
  completeEach(requests: readonly CompletionRequest[], hooks: LmCompleteHooks = {}): Promise<Completion[]> {
    const stream = hooks.onToken
      ? requests.map((_, row) => row).filter((row) => !hooks.streamRows || hooks.streamRows.has(row))
      : [];
    return this.lmCall<Completion>('completeEach', requests.length, { ...hooks, onPrefix: hooks.onToken }, (id) => ({
      type: 'complete',
      id,
      requests: requests.map((r) => ({ ...r })),
      stream,
    }));
  }

  /**
   * A language-model batch: rows whose requests go (`hooks.onCancel`, `cancelled` at the start, or
   * `signal` for all) are sent to the thread, which drops them between two steps.
   */
  private lmCall<R>(
    method: string,
    rows: number,
    hooks: LmServeHooks<R> & { onPrefix?(input: number, text: string): void },
    build: (id: number) => ToWorker,
  ): Promise<R[]> {
    let batch = 0;
    const cancel = (list: number[]) => {
      if (list.length > 0 && this.calls.has(batch)) this.send({ type: 'cancel', id: batch, rows: list });
    };
    const all = Array.from({ length: rows }, (_, row) => row);
    const onAbort = () => cancel(all);
    const result = this.call<R>(method, hooks, (id) => {
      batch = id;
      return { msg: build(id) };
    });
    // Rows whose requests went between the batch's start and now.
    cancel(all.filter((row) => hooks.cancelled?.(row)));
    hooks.onCancel?.((row) => cancel([row]));
    const { signal } = hooks;
    signal?.addEventListener('abort', onAbort, { once: true });
    return result
      .finally(() => signal?.removeEventListener('abort', onAbort))
      .then((r) => {
        signal?.throwIfAborted();
        return r;
      });
  }

  /** Registers a batch under a fresh id and sends it; results come back through {@link receive}. */
  private call<R>(
    method: string,
    hooks: { onPrefix?(input: number, text: string): void; onDone?(input: number, result: R): void },
    build: (id: number) => { msg: ToWorker; transfer?: ArrayBuffer[] },
  ): Promise<R[]> {
    if (!this.alive) return Promise.reject(new Error(`${method}: the decode thread is released or stopped`));
    const id = this.nextId++;
    let call!: Call;
    const result = new Promise<R[]>((resolve, reject) => {
      call = {
        onPrefix: hooks.onPrefix?.bind(hooks),
        onDone: hooks.onDone && ((input, r) => hooks.onDone!(input, r as R)),
        settled: Promise.resolve(),
        results: [],
        resolve: (results) => resolve(results as R[]),
        reject,
      };
    });
    call.settled = result.catch(() => undefined);
    const { msg, transfer } = build(id);
    this.calls.set(id, call);
    try {
      this.worker.postMessage(msg, transfer);
    } catch (err) {
      this.calls.delete(id);
      call.reject(err);
    }
    return result;
  }

  /** Lets the batches in flight finish, then releases the model and ends the thread. */
  async release(): Promise<void> {
    if (!this.ended && !this.releasing) {
      this.releasing = true;
      await Promise.all([...this.calls.values()].map((c) => c.settled));
      this.send({ type: 'release' });
    }
    await this.exit;
  }

  private send(msg: ToWorker): void {
    this.worker.postMessage(msg);
  }

  private receive(msg: FromWorker): void {
    if (msg.type === 'log') {
      this.opts.log?.(msg.message);
      return;
    }
    if (!('id' in msg)) return;
    const call = this.calls.get(msg.id);
    if (!call) return;
    switch (msg.type) {
      case 'prefix':
        call.onPrefix?.(msg.input, msg.text);
        break;
      case 'done':
        call.results[msg.input] = msg.translation;
        call.onDone?.(msg.input, msg.translation);
        break;
      case 'captioned':
        call.results[msg.input] = msg.caption;
        call.onDone?.(msg.input, msg.caption);
        break;
      case 'scored':
        call.results[msg.input] = msg.score;
        call.onDone?.(msg.input, msg.score);
        break;
      case 'completed':
        call.results[msg.input] = msg.completion;
        call.onDone?.(msg.input, msg.completion);
        break;
      case 'finished':
        this.calls.delete(msg.id);
        call.resolve(call.results);
        break;
      case 'failed': {
        this.calls.delete(msg.id);
        const err = new Error(`decode thread: ${msg.message}`);
        if (msg.stack) err.stack = `${err.message}\n--- in the decode thread ---\n${msg.stack}`;
        call.reject(err);
        break;
      }
    }
  }

  /** The thread is gone: nothing will answer the batches it held. */
  private failAll(reason: string): void {
    const calls = [...this.calls.values()];
    this.calls.clear();
    for (const call of calls) call.reject(new DecoderCrashedError(this.card.name, { cause: new Error(reason) }));
    if (!this.releasing) this.opts.onCrash?.(reason, this);
  }
}
