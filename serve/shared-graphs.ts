import { readGraph } from '../core/runtime/load-node.ts';
import { readModelFolder } from './model-folders.ts';

/**
 * A model's graphs read once per process and shared by its decode threads: each thread used to read every graph
 * from the folder itself, at start-up and again when it restarted after a crash, so threads could load different
 * versions of a file replaced meanwhile. Read here once (checked as any model file is: inside the folder, a
 * regular file, of the size its card records), into shared memory, and handed to every thread of the model, a
 * restarted one included, which makes its sessions from them (core/runtime/load-node.ts `graphs`).
 *
 * What it costs: onnxruntime-node takes a model only from an ArrayBuffer, so each thread still copies the bytes
 * while it makes its sessions, as its own read did; and the process keeps this one copy of every graph for as long
 * as the model is served, for the restarts.
 * @returns the graphs by file name; one that cannot be read is left out, for the thread's loader to name
 * @throws Error naming the card when it cannot be read (as the thread's loader would)
 */
export async function readSharedGraphs(dir: string): Promise<Map<string, Uint8Array>> {
  const { card } = await readModelFolder(dir);
  const graphs = new Map<string, Uint8Array>();
  for (const { file } of Object.values(card.graphs)) {
    let bytes: Uint8Array;
    try {
      // Read straight into shared memory, not into a buffer copied there.
      bytes = await readGraph(dir, card, file, undefined, (size) => new Uint8Array(new SharedArrayBuffer(size)));
    } catch {
      // Missing, misnamed, outside the folder, of the wrong size: left to the threads' loader, which refuses the
      // folder in its own words and order, as it does for any model folder.
      continue;
    }
    graphs.set(file, bytes);
  }
  return graphs;
}
