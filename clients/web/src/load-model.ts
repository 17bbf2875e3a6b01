/**
 * Loads an exported model folder into the page: the card, then both graphs (with progress, through
 * Cache Storage), then a {@link Seq2SeqRuntime} on onnxruntime-web: the same runtime, tokeniser and
 * beam search the server uses. A caption model's runtime is also wrapped in a
 * {@link CaptionRuntime}, the one the server and `frost caption` use.
 */
import { CaptionRuntime } from '../../../core/runtime/caption.ts';
import { MODEL_CARD_FILE, parseModelCard, type ModelCard } from '../../../core/runtime/model-card.ts';
import { Seq2SeqRuntime, type GraphRole } from '../../../core/runtime/seq2seq.ts';
import type { ProgressListener } from './download.ts';
import { cachedFetch } from './file-cache.ts';
import { cachedMaterialisedGraph, materialisedGraph } from './materialised-graph.ts';
import type { Backend, OrtSetup } from './ort-loader.ts';

/** A model ready to translate in the page, with what it cost to get it there. */
export interface LoadedModel {
  /** The folder URL it was loaded from (ends with '/'). */
  folder: string;
  card: ModelCard;
  runtime: Seq2SeqRuntime;
  /** Present when the card's task is 'caption': the runtime that takes images. */
  captioner?: CaptionRuntime;
  /** Where its sessions run: 'wasm' when WebGPU was asked for but could not take the model. */
  backend: Backend;
  threads: number;
  /** Bytes of the two graphs, and how many of them came from the cache. */
  downloadBytes: number;
  cachedBytes: number;
  downloadMs: number;
  /** Time to create both ONNX Runtime sessions. */
  loadMs: number;
  /** Per-input latencies of in-browser translations (per sentence) or captions (per image) so far. */
  latencies: number[];
}

/** A folder URL with the trailing slash that makes `new URL(file, folder)` resolve inside it. */
export function normaliseFolder(url: string, base: string): string {
  const u = new URL(url, base);
  if (!u.pathname.endsWith('/')) u.pathname += '/';
  u.hash = '';
  return u.href;
}

/**
 * Fetches and opens the model in `folder`.
 * @throws Error naming the URL of a missing or invalid card or graph, or one the card points outside the folder
 */
export async function loadModel(folder: string, setup: OrtSetup, onProgress: ProgressListener): Promise<LoadedModel> {
  const cardUrl = new URL(MODEL_CARD_FILE, folder).href;
  const response = await fetch(cardUrl, { cache: 'no-cache' });
  if (!response.ok) throw new Error(`${cardUrl}: HTTP ${response.status} ${response.statusText}`);
  const card = parseModelCard(await response.text(), cardUrl);

  const roles: GraphRole[] = ['encoder', 'decoder'];
  const files = roles.map((role) => card.graphs[role].file);
  const urls = files.map((file) => graphUrl(folder, file, cardUrl));
  const sizes = files.map((file) => card.files[file]?.bytes);
  const total = sizes.every((s) => s !== undefined) ? sizes.reduce((a, b) => a + b, 0) : undefined;

  // One bar for both files: progress is the bytes done in earlier files plus the current one's.
  const started = performance.now();
  const bytes: Uint8Array[] = [];
  // Seeded heads: the graphs with their regenerated matrices stored, from the cache after the first load.
  const seeded = card.params.generated > 0;
  const version = `${card.name}@${card.created}`;
  const materialised: boolean[] = [];
  let done = 0;
  let cachedBytes = 0;
  for (let i = 0; i < files.length; i++) {
    const ready = seeded ? await cachedMaterialisedGraph(urls[i], version) : null;
    materialised.push(ready !== null);
    if (ready) {
      bytes.push(ready);
      // Counted as the graph it stands for, so progress and the cache figures read as for any cached file.
      done += sizes[i] ?? ready.length;
      cachedBytes += sizes[i] ?? ready.length;
      onProgress(done, total);
      continue;
    }
    // The card's creation time changes on every export, so a re-export replaces the cached graphs.
    const got = await cachedFetch(urls[i], version, (loaded) => onProgress(done + loaded, total), sizes[i]);
    bytes.push(got.bytes);
    done += got.bytes.length;
    if (got.fromCache) cachedBytes += got.bytes.length;
  }
  const downloadMs = performance.now() - started;

  const create = async (backend: Backend): Promise<{ runtime: Seq2SeqRuntime; loadMs: number }> => {
    const t0 = performance.now();
    // One after the other: two onnxruntime-web sessions running at once in the same wasm instance
    // broke it (an int8-compute fixed-l2 model, whose encoder and decoder both have values to
    // materialise, failed with 'RuntimeError: null function' in Chromium).
    const ready: Array<{ bytes: Uint8Array }> = [];
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      ready.push(seeded && !materialised[i] ? await materialisedGraph(setup.ort, b, urls[i]!, version) : { bytes: b });
    }
    const runtime = await Seq2SeqRuntime.create({
      ort: setup.ort,
      card,
      graphs: { encoder: ready[0].bytes, decoder: ready[1].bytes },
      sessionOptions: { executionProviders: [backend], graphOptimizationLevel: 'all' },
      locate: (file) => new URL(file, folder).href,
      // Subword models: small files, fetched as the card names them (checked inside the folder like the graphs).
      files: async (file) => {
        const url = graphUrl(folder, file, cardUrl);
        const got = await fetch(url, { cache: 'no-cache' });
        if (!got.ok) throw new Error(`HTTP ${got.status} ${got.statusText}`);
        return new Uint8Array(await got.arrayBuffer());
      },
    });
    return { runtime, loadMs: performance.now() - t0 };
  };
  let backend = setup.backend;
  let opened: { runtime: Seq2SeqRuntime; loadMs: number };
  try {
    opened = await create(backend);
  } catch (err) {
    if (backend !== 'webgpu') throw err;
    // The WebGPU build also runs on its wasm CPU provider; a model WebGPU cannot take still loads.
    console.warn(`frost: WebGPU could not load ${card.name}, using wasm instead:`, err);
    backend = 'wasm';
    opened = await create(backend);
  }
  return {
    folder,
    card,
    runtime: opened.runtime,
    ...(card.task === 'caption' ? { captioner: CaptionRuntime.fromRuntime(opened.runtime) } : {}),
    backend,
    threads: setup.threads,
    downloadBytes: done,
    cachedBytes,
    downloadMs,
    loadMs: opened.loadMs,
    latencies: [],
  };
}

/** A graph's URL; a card is data, so one naming a file outside its folder (`../x`, another host) is refused. */
function graphUrl(folder: string, file: string, cardUrl: string): string {
  const url = new URL(file, folder);
  if (file === '' || !url.href.startsWith(folder)) {
    throw new Error(`${cardUrl}: graph file '${file}' must name a file inside the model folder`);
  }
  return url.href;
}
