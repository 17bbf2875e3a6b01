/**
 * A decode thread's entry (started through tsx-worker-boot.js): loads one model directory with
 * onnxruntime-node, as its card's family loads (serve/served-family.ts), and decodes the batches the
 * main thread sends with that family's handlers. onnxruntime-node's `session.run` is a synchronous
 * native call; here it blocks only this thread, never the server's event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readModelFolder } from './model-folders.ts';
import type { AnyRuntime } from './model-registry.ts';
import {
  batchHandler,
  type DecodeThreadScope,
  servedFamily,
  servedFamilyNames,
  type ServedFamily,
} from './served-families.ts';
import type { BatchMessage, DecodeWorkerData, FromWorker, ToWorker } from './worker-protocol.ts';

if (!parentPort) throw new Error('serve/decode-worker.ts runs as a worker thread (see serve/decode-thread.ts)');
const port = parentPort;
const post = (msg: FromWorker) => port.postMessage(msg);
const { dir, device, intraOpNumThreads, graphs } = workerData as DecodeWorkerData;

/** Rows dropped from each batch in flight that asked for them (its requests gone), by batch id. */
const cancelled = new Map<number, Set<number>>();

const thread: DecodeThreadScope = {
  post,
  dropped(id) {
    let rows = cancelled.get(id);
    if (!rows) cancelled.set(id, (rows = new Set()));
    return rows;
  },
  settle,
};

let loaded: { family: ServedFamily; runtime: AnyRuntime } | undefined;
try {
  const family = servedFamily((await readModelFolder(dir)).kind.family);
  const runtime = await family.load(dir, {
    device,
    intraOpNumThreads,
    graphs,
    log: (message) => post({ type: 'log', message }),
  });
  try {
    await family.warm(runtime);
  } catch (err) {
    await runtime.release().catch(() => undefined);
    throw new Error(`${dir}: loaded, but its first decode failed: ${(err as Error)?.message ?? String(err)}`, {
      cause: err,
    });
  }
  loaded = { family, runtime };
  post({ type: 'ready', card: runtime.card });
} catch (err) {
  post({ type: 'load-failed', message: (err as Error)?.message ?? String(err) });
  port.close();
}

if (loaded) {
  const { family, runtime } = loaded;
  port.on('message', (msg: ToWorker) => {
    if (msg.type === 'cancel') {
      for (const row of msg.rows) cancelled.get(msg.id)?.add(row);
      return;
    }
    if (msg.type === 'release') {
      // Closing the port lets the thread end once the sessions are gone.
      void runtime.release().finally(() => port.close());
      return;
    }
    const decode = batchHandler(family, msg.type);
    if (decode) decode(runtime, msg, thread);
    else if (isBatch(msg)) refuse(runtime, msg);
    // The two sides disagree about the protocol: a bug. Dying gets this thread replaced with
    // its batches failed loudly, which beats guessing.
    else throw new Error(`decode thread: unknown message type '${(msg as { type?: unknown }).type}'`);
  });
}

/** A batch some family decodes: one of another family's is refused, any other message is a protocol bug. */
function isBatch(msg: ToWorker): msg is BatchMessage {
  return servedFamilyNames().some((name) => batchHandler(servedFamily(name), msg.type as BatchMessage['type']));
}

/** A batch of a kind this thread's model does not decode: the two sides disagree, so it fails loudly. */
function refuse(runtime: AnyRuntime, msg: BatchMessage): void {
  const { name, task } = runtime.card;
  post({ type: 'failed', id: msg.id, message: `model '${name}' is a ${task} model: it cannot ${msg.type}` });
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
