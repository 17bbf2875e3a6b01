/**
 * Image preprocessing (core/image/preprocess.ts: centre crop, resize, normalise) in a worker
 * thread, off the event loop. It is plain JS over every pixel of the decoded upload: 9-10 ms for a
 * 640×480 photo and 180 ms for 25 megapixels on the 2-core dev machine (npm run bench:preprocess), time in which the
 * server
 * could answer nothing else, health checks included. (sharp's decoding already runs in libuv's
 * pool; the resize stays frost's own so that a server, the CLI and the browser make the same
 * tensor from the same image.)
 *
 * One thread per process, shared by every app, started on first use; it keeps the process alive
 * only while it holds a job. The RGBA buffer moves to the thread and the pixels come back without
 * copies (transfer lists). A thread that dies fails the jobs it held; the next job starts another.
 */
import { Worker } from 'node:worker_threads';
import type { ImageSpec } from '../core/image/preprocess.ts';

const BOOT = new URL('./tsx-worker-boot.js', import.meta.url);
const ENTRY = new URL('./image-preprocess-worker.ts', import.meta.url).href;

/** What goes to the thread. */
export interface PreprocessJob {
  id: number;
  rgba: ArrayBuffer;
  width: number;
  height: number;
  spec: ImageSpec;
}

/** What comes back: the CHW float pixels, or why not. */
export type PreprocessReply = { id: number; pixels: Float32Array } | { id: number; error: string };

interface Pending {
  /** The thread the job went to: only its end fails the job. */
  worker: Worker;
  resolve(pixels: Float32Array): void;
  reject(err: Error): void;
}

export class ImagePreprocessThread {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  /** The running thread's id (0 before the first job): lets tests see that the work left the main thread. */
  get threadId(): number {
    return this.worker?.threadId ?? 0;
  }

  /**
   * preprocessRgba(rgba, width, height, spec), computed in the thread. `rgba` is handed over: when
   * it is the whole of its buffer, that buffer moves to the thread and is empty here afterwards.
   */
  run(rgba: Uint8Array | Uint8ClampedArray, width: number, height: number, spec: ImageSpec): Promise<Float32Array> {
    const own =
      rgba.byteOffset === 0 && rgba.byteLength === rgba.buffer.byteLength && rgba.buffer instanceof ArrayBuffer;
    const buffer = own ? (rgba.buffer as ArrayBuffer) : rgba.slice().buffer;
    const job: PreprocessJob = { id: this.nextId++, rgba: buffer, width, height, spec };
    const worker = this.thread();
    return new Promise((resolve, reject) => {
      this.pending.set(job.id, { worker, resolve, reject });
      worker.ref();
      worker.postMessage(job, [buffer]);
    });
  }

  /** Ends the thread; jobs still in it fail. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker != null) await worker.terminate();
  }

  private thread(): Worker {
    if (this.worker != null) return this.worker;
    const worker = new Worker(BOOT, { workerData: { entry: ENTRY } });
    worker.unref();
    worker.on('message', (reply: PreprocessReply) => {
      const job = this.pending.get(reply.id);
      if (job == null) return;
      this.pending.delete(reply.id);
      if (![...this.pending.values()].some((p) => p.worker === worker)) worker.unref();
      if ('error' in reply) job.reject(new Error(`image preprocessing failed: ${reply.error}`));
      else job.resolve(reply.pixels);
    });
    worker.on('error', (err) => this.failAll(`the image preprocessing thread failed: ${err.message}`, worker));
    worker.on('exit', (code) => this.failAll(`the image preprocessing thread exited with code ${code}`, worker));
    this.worker = worker;
    return worker;
  }

  private failAll(reason: string, worker: Worker): void {
    if (this.worker === worker) this.worker = null;
    for (const [id, job] of this.pending) {
      if (job.worker !== worker) continue;
      this.pending.delete(id);
      job.reject(new Error(reason));
    }
  }
}

let shared: ImagePreprocessThread | null = null;

/** The process's preprocessing thread (created on first call). */
export function imagePreprocessThread(): ImagePreprocessThread {
  shared ??= new ImagePreprocessThread();
  return shared;
}
