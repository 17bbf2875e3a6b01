/**
 * A decode thread's entry (started through tsx-worker-boot.js): loads one model directory with
 * onnxruntime-node and decodes the batches the main thread sends. onnxruntime-node's `session.run`
 * is a synchronous native call; here it blocks only this thread, never the server's event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { InProcessRuntime } from './in-process-runtime.ts';
import type { DecodeWorkerData, FromWorker, ToWorker } from './worker-protocol.ts';

if (!parentPort) throw new Error('serve/decode-worker.ts runs as a worker thread (see serve/decode-thread.ts)');
const port = parentPort;
const post = (msg: FromWorker) => port.postMessage(msg);
const { dir, device, intraOpNumThreads } = workerData as DecodeWorkerData;

let runtime: InProcessRuntime | undefined;
try {
  runtime = await InProcessRuntime.load(dir, {
    device,
    intraOpNumThreads,
    log: (message) => post({ type: 'log', message }),
  });
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
        translate(rt, msg);
        return;
      case 'caption':
        caption(rt, msg);
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

/** Every batch ends with exactly one `finished` or `failed`, after its per-input messages. */
function settle(id: number, decoding: Promise<unknown>): void {
  decoding.then(
    () => post({ type: 'finished', id }),
    (err: unknown) =>
      post({ type: 'failed', id, message: (err as Error)?.message ?? String(err), stack: (err as Error)?.stack }),
  );
}
