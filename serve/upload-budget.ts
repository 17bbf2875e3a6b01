/**
 * Admission control for caption uploads, before any of their work starts. An upload costs memory
 * twice: its body while it is read and waits (up to `maxImageBytes`, 4/3 of it as base64), and its
 * decoded pixels (a 25-megapixel PNG of 82 kB is 100 MB of RGBA). Without a bound, 32 such uploads
 * at once took 6.8 GB and starved libuv's pool, whose 4 threads also serve gzip bodies and files.
 *
 * So a request first reserves its body's size from a byte budget (503 when it is spent), then waits
 * for one of a few decode slots (503 when too many already wait). Decoding runs in libuv's pool
 * (sharp), so the slots stay below its size; the pixels themselves are bounded per upload by
 * decoding large images at reduced size (core/image/decode-node.ts).
 */
import { HttpError } from './errors.ts';

/** Options of {@link UploadBudget}. */
export interface UploadBudgetOptions {
  /** Most upload bytes held at once, from the body's first byte to the end of its decoding. @default 256 MiB */
  maxBytes?: number;
  /**
   * Uploads decoded and preprocessed at once. Each decode holds one of libuv's threads
   * (UV_THREADPOOL_SIZE, 4 unless set), which file reads and gzip bodies need too.
   * @default half of libuv's pool, at least 1
   */
  decodeConcurrency?: number;
  /** Uploads waiting for a decode slot; past it, 503. @default 32 */
  maxWaiting?: number;
}

/** libuv's pool size: UV_THREADPOOL_SIZE when set, else libuv's default of 4. */
function uvPoolSize(): number {
  const n = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(n) && n > 0 ? n : 4;
}

const DEFAULT_UPLOAD_BUDGET: Readonly<Required<UploadBudgetOptions>> = {
  maxBytes: 256 * 1024 * 1024,
  decodeConcurrency: Math.max(1, Math.floor(uvPoolSize() / 2)),
  maxWaiting: 32,
};

/** Bytes taken from the budget; give them back exactly once. */
export interface ByteReservation {
  release(): void;
}

export class UploadBudget {
  readonly options: Readonly<Required<UploadBudgetOptions>>;
  private bytesHeld = 0;
  private decoding = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(options: UploadBudgetOptions = {}) {
    this.options = { ...DEFAULT_UPLOAD_BUDGET, ...options };
    const { maxBytes, decodeConcurrency, maxWaiting } = this.options;
    if (!(maxBytes > 0)) throw new RangeError(`'maxBytes' must be positive, got ${maxBytes}`);
    if (!Number.isInteger(decodeConcurrency) || decodeConcurrency < 1) {
      throw new RangeError(`'decodeConcurrency' must be a positive integer, got ${decodeConcurrency}`);
    }
    if (!Number.isInteger(maxWaiting) || maxWaiting < 0)
      throw new RangeError(`'maxWaiting' must be a non-negative integer, got ${maxWaiting}`);
  }

  /** Bytes reserved now. */
  get heldBytes(): number {
    return this.bytesHeld;
  }

  /**
   * Reserves `bytes` (the body's Content-Length, or the most it may be) before the body is read.
   * @throws HttpError FROST_ERR_UPLOADS_BUSY (503) when the budget cannot hold them now
   */
  reserveBytes(bytes: number): ByteReservation {
    if (this.bytesHeld > 0 && this.bytesHeld + bytes > this.options.maxBytes) {
      throw new HttpError('FROST_ERR_UPLOADS_BUSY', { detail: `${this.bytesHeld} bytes of uploads are already held` });
    }
    this.bytesHeld += bytes;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.bytesHeld -= bytes;
      },
    };
  }

  /**
   * Runs `work` (decode and preprocess) in a decode slot, waiting for one if all are busy. A wait
   * ends early, with `signal`'s reason, when the client leaves.
   * @throws HttpError FROST_ERR_UPLOADS_BUSY (503) when `maxWaiting` uploads already wait
   */
  async decode<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.decoding >= this.options.decodeConcurrency) {
      if (this.waiting.length >= this.options.maxWaiting) {
        throw new HttpError('FROST_ERR_UPLOADS_BUSY', {
          detail: `${this.waiting.length} uploads are already waiting to be decoded`,
        });
      }
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener('abort', leave);
          resolve();
        };
        const leave = () => {
          const at = this.waiting.indexOf(go);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(signal!.reason);
        };
        if (signal?.aborted) {
          reject(signal.reason);
          return;
        }
        signal?.addEventListener('abort', leave, { once: true });
        this.waiting.push(go);
      });
    } else {
      this.decoding++;
    }
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter, so `decoding` only drops when none waits.
      const next = this.waiting.shift();
      if (next) next();
      else this.decoding--;
    }
  }
}
