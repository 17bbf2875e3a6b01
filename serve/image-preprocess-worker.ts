/** The image preprocessing thread's entry (serve/image-preprocess-thread.ts is the other side). */
import { parentPort } from 'node:worker_threads';
import { preprocessRgba } from '../core/image/preprocess.ts';
import type { PreprocessJob, PreprocessReply } from './image-preprocess-thread.ts';

const port = parentPort!;
port.on('message', (job: PreprocessJob) => {
  let reply: PreprocessReply;
  try {
    reply = { id: job.id, pixels: preprocessRgba(new Uint8Array(job.rgba), job.width, job.height, job.spec) };
  } catch (err) {
    reply = { id: job.id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply, 'pixels' in reply ? [reply.pixels.buffer as ArrayBuffer] : []);
});
