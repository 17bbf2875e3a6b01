/**
 * A decode thread's entry (started through tsx-worker-boot.js): loads one model directory with
 * onnxruntime-node (a translation or caption model, or a language model) and decodes the batches
 * the main thread sends. onnxruntime-node's `session.run` is a synchronous native call; here it
 * blocks only this thread, never the server's event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadLmModelDir } from '../core/runtime/load-lm-node.ts';
import type { ModelFamily } from '../core/runtime/card-kinds.ts';
import type { LmRuntime } from '../core/runtime/lm.ts';
import { InProcessRuntime } from './in-process-runtime.ts';
import { readModelFolder } from './model-folders.ts';
import type { DecodeWorkerData, FromWorker, ToWorker } from './worker-protocol.ts';

if (!parentPort) throw new Error('serve/decode-worker.ts runs as a worker thread (see serve/decode-thread.ts)');
const port = parentPort;
const post = (msg: FromWorker) => port.postMessage(msg);
const { dir, device, intraOpNumThreads } = workerData as DecodeWorkerData;

/** Rows dropped from each language-model batch in flight (its requests gone), by batch id. */
const cancelled = new Map<number, Set<number>>();

/** How each family of model loads on this thread. */
const loaders: Record<ModelFamily, (dir: string) => Promise<InProcessRuntime | LmRuntime>> = {
  seq2seq: (d) =>
    InProcessRuntime.load(d, { device, intraOpNumThreads, log: (message) => post({ type: 'log', message }) }),
  // A language model's sessions run on the CPU: its step graph is small, and one row per request.
  lm: (d) => loadLmModelDir(d, { intraOpNumThreads }),
};

let runtime: InProcessRuntime | LmRuntime | undefined;
try {
  runtime = await loaders[(await readModelFolder(dir)).kind.family](dir);
  post({ type: 'ready', card: runtime.card });
} catch (err) {
  post({ type: 'load-failed', message: (err as Error)?.message ?? String(err) });
  port.close();
}

if (runtime) {
  const rt = runtime;
  port.on('message', (msg: ToWorker) => {
    switch (msg.type) {
      case 'translate':
        if (rt instanceof InProcessRuntime) translate(rt, msg);
        else refuse(msg.id, 'translate');
        return;
      case 'caption':
        if (rt instanceof InProcessRuntime) caption(rt, msg);
        else refuse(msg.id, 'caption');
        return;
      case 'score':
        if (rt instanceof InProcessRuntime) refuse(msg.id, 'score');
        else score(rt, msg);
        return;
      case 'complete':
        if (rt instanceof InProcessRuntime) refuse(msg.id, 'complete');
        else complete(rt, msg);
        return;
      case 'cancel':
        for (const row of msg.rows) cancelled.get(msg.id)?.add(row);
        return;
      case 'release':
        // Closing the port lets the thread end once the sessions are gone.
        void rt.release().finally(() => port.close());
        return;
      default:
        // The two sides disagree about the protocol: a bug. Dying gets this thread replaced with
        // its batches failed loudly, which beats guessing.
        throw new Error(`decode thread: unknown message type '${(msg as { type?: unknown }).type}'`);
    }
  });
}

function translate(rt: InProcessRuntime, msg: Extract<ToWorker, { type: 'translate' }>): void {
  const { id } = msg;
  settle(
    id,
    rt.translateEach(msg.texts, msg.options, {
      prefixInputs: new Set(msg.prefixInputs),
      onPrefix: (input, text) => post({ type: 'prefix', id, input, text }),
      onDone: (input, translation) => post({ type: 'done', id, input, translation }),
    }),
  );
}

function caption(rt: InProcessRuntime, msg: Extract<ToWorker, { type: 'caption' }>): void {
  const { id } = msg;
  settle(
    id,
    rt.captionEach(msg.images, msg.options, {
      onDone: (input, result) => post({ type: 'captioned', id, input, caption: result }),
    }),
  );
}

function score(rt: LmRuntime, msg: Extract<ToWorker, { type: 'score' }>): void {
  const { id } = msg;
  const dropped = new Set<number>();
  cancelled.set(id, dropped);
  settle(
    id,
    rt.scoreEach(msg.texts, {
      cancelled: (row) => dropped.has(row),
      onDone: (input, result) => post({ type: 'scored', id, input, score: result }),
    }),
  );
}

function complete(rt: LmRuntime, msg: Extract<ToWorker, { type: 'complete' }>): void {
  const { id } = msg;
  const dropped = new Set<number>();
  const streamed = new Set(msg.stream);
  cancelled.set(id, dropped);
  settle(
    id,
    rt.completeEach(msg.requests, {
      cancelled: (row) => dropped.has(row),
      onToken: (input, token) => {
        if (streamed.has(input)) post({ type: 'prefix', id, input, text: token });
      },
      onDone: (input, result) => post({ type: 'completed', id, input, completion: result }),
    }),
  );
}

/** A batch of a kind this thread's model does not decode: the two sides disagree, so it fails loudly. */
function refuse(id: number, what: string): void {
  const task = runtime?.card.task ?? '?';
  post({ type: 'failed', id, message: `model '${runtime?.card.name}' is a ${task} model: it cannot ${what}` });
}

/** Every batch ends with exactly one `finished` or `failed`, after its per-input messages. */
function settle(id: number, decoding: Promise<unknown>): void {
  const forget = () => cancelled.delete(id);
  decoding.then(forget, forget);
  decoding.then(
    () => post({ type: 'finished', id }),
    (err: unknown) =>
      post({ type: 'failed', id, message: (err as Error)?.message ?? String(err), stack: (err as Error)?.stack }),
  );
}
