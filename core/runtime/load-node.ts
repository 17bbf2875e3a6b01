/**
 * Loads an exported model directory with onnxruntime-node (server, CLI). Node only; the browser
 * builds a {@link Seq2SeqRuntime} itself from fetched bytes and onnxruntime-web.
 */
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { InferenceSession } from 'onnxruntime-common';
import { MODEL_CARD_FILE, parseModelCard, type ModelCard } from './model-card.ts';
import { CaptionRuntime } from './caption.ts';
import { cardFiles, checkModelFiles, ModelFileError, readModelFile, sizeMismatch } from './model-files.ts';
import { createNodeSession, listedExecutionProviders, ort, type NodeSessionOptions } from './ort-node.ts';
import { Seq2SeqRuntime } from './seq2seq.ts';

/** Where to run: `cpu`, `cuda` (fail unless CUDA works), or `auto` (CUDA when it works, else CPU with a note). */
export type Device = 'cpu' | 'cuda' | 'auto';
export const DEVICES: readonly Device[] = ['cpu', 'cuda', 'auto'];

/** Options of {@link loadModelDir}. */
export interface LoadModelOptions {
  /** @default 'cpu' */
  device?: Device;
  /** Threads ORT uses inside one operator; 0 lets ORT pick (one per core). @default 0 */
  intraOpNumThreads?: number;
  /** Where notes go (the CUDA fallback of `auto`). @default a line on stderr */
  log?: (message: string) => void;
  /**
   * Graphs already read from the folder, by file name, used instead of reading them again: a server's decode
   * threads share the bytes their process read once (serve/worker-runtime.ts). Each is still checked against the
   * size the card records. @default every graph read from the folder
   */
  graphs?: ReadonlyMap<string, Uint8Array>;
}

/** What ORT needs besides onnxruntime-node's npm package to run on CUDA; part of the error for `--device cuda`. */
const CUDA_REQUIREMENTS =
  "onnxruntime-node's CUDA provider libraries (libonnxruntime_providers_cuda.so and libonnxruntime_providers_shared.so " +
  'next to its native binding; install them with `npm install onnxruntime-node --onnxruntime-node-install=cuda12`), ' +
  'an NVIDIA driver, and the CUDA 12 and cuDNN 9 libraries on the library path';

/**
 * Reads `dir/model-card.json`, validates it, and opens the two graphs it names with onnxruntime-node.
 * @throws Error naming the path of a missing or corrupt card or graph; for device 'cuda', an error
 *   naming what is missing when CUDA cannot be used
 */
export async function loadModelDir(dir: string, opts: LoadModelOptions = {}): Promise<Seq2SeqRuntime> {
  const device = opts.device ?? 'cpu';
  if (!DEVICES.includes(device))
    throw new Error(`device must be one of ${DEVICES.join(', ')}, got '${String(device)}'`);
  const threads = opts.intraOpNumThreads ?? 0;
  if (!Number.isInteger(threads) || threads < 0) {
    throw new Error(`intraOpNumThreads must be an integer >= 0, got ${String(opts.intraOpNumThreads)}`);
  }
  const log = opts.log ?? ((message: string) => process.stderr.write(`frost: ${message}\n`));

  const card = await readModelCard(dir);
  const encoderPath = graphPath(dir, card, 'encoder');
  graphPath(dir, card, 'decoder');
  await checkModelFiles(dir, cardFiles(card));
  const encoder = await readGraph(dir, card, card.graphs.encoder.file, opts.graphs);
  const decoder = await readGraph(dir, card, card.graphs.decoder.file, opts.graphs);

  const base: NodeSessionOptions = { intraOpNumThreads: threads };
  const { providers, encoderSession } = await chooseProviders(device, encoder, encoderPath, base, log);
  const options: NodeSessionOptions = { ...base, executionProviders: providers };
  return Seq2SeqRuntime.create({
    ort,
    card,
    graphs: { encoder, decoder },
    // The CUDA probe already built the encoder's session; reuse it rather than build it twice.
    createSession: (bytes, role) =>
      role === 'encoder' && encoderSession ? Promise.resolve(encoderSession) : createNodeSession(bytes, options),
    locate: (file) => join(dir, file),
    files: (file) => readCardFile(dir, card, file),
  });
}

/**
 * Another file the card names (a subword model), read from inside the model directory; a size other than the
 * card's record means a truncated or replaced file. Errors carry the reason only: the caller adds the path.
 */
async function readCardFile(dir: string, card: ModelCard, file: string): Promise<Uint8Array> {
  const rel = relative(resolve(dir), resolve(dir, file));
  if (file === '' || isAbsolute(file) || rel.startsWith('..') || isAbsolute(rel)) {
    throw new Error(`'${file}' is not a file inside the model directory`);
  }
  try {
    return await readModelFile(dir, file, 'file', card.files[file]?.bytes);
  } catch (err) {
    throw new Error(err instanceof ModelFileError ? err.why : (err as Error).message, { cause: err });
  }
}

/**
 * {@link loadModelDir} for a caption model: the same card and graph checks and options, and a
 * {@link CaptionRuntime} to caption preprocessed images with.
 * @throws TypeError when the directory holds a translation model; otherwise as loadModelDir
 */
export async function loadCaptionModelDir(dir: string, opts: LoadModelOptions = {}): Promise<CaptionRuntime> {
  const card = await readModelCard(dir);
  if (card.task !== 'caption')
    throw new TypeError(`${join(dir, MODEL_CARD_FILE)}: '${card.name}' is a ${card.task} model, not a caption model`);
  return CaptionRuntime.fromRuntime(await loadModelDir(dir, opts));
}

/**
 * Reads and validates `dir/model-card.json`.
 * @throws Error naming the card's path when it is missing, not JSON, or not a valid card
 */
export async function readModelCard(dir: string): Promise<ModelCard> {
  const path = join(dir, MODEL_CARD_FILE);
  return parseModelCard(Buffer.from(await readModelFile(dir, MODEL_CARD_FILE, 'card')).toString('utf8'), path);
}

/** The path of a graph file; the card is data, so a name escaping the model directory is refused. */
function graphPath(dir: string, card: ModelCard, role: 'encoder' | 'decoder'): string {
  const file = card.graphs[role].file;
  const rel = relative(resolve(dir), resolve(dir, file));
  if (file === '' || isAbsolute(file) || rel.startsWith('..') || isAbsolute(rel)) {
    throw new Error(
      `${join(dir, MODEL_CARD_FILE)}: graphs.${role}.file '${file}' must name a file inside the model directory`,
    );
  }
  return join(dir, file);
}

/**
 * Reads a graph, or takes it from `read` (the bytes a process read once); when the card records its size, a file of
 * another size is refused unread (truncated or replaced).
 */
export async function readGraph(
  dir: string,
  card: { files: Readonly<Record<string, { bytes: number }>> },
  file: string,
  read?: ReadonlyMap<string, Uint8Array>,
  allocate?: (bytes: number) => Uint8Array,
): Promise<Uint8Array> {
  const recorded = card.files[file]?.bytes;
  const bytes = read?.get(file);
  if (bytes === undefined) return readModelFile(dir, file, 'graph', recorded, allocate);
  if (recorded !== undefined && bytes.length !== recorded)
    throw new ModelFileError(join(dir, file), sizeMismatch(file, bytes.length, recorded));
  // onnxruntime-node takes a model from an ArrayBuffer only: shared bytes are copied (memory, not another read).
  return bytes.buffer instanceof ArrayBuffer ? bytes : bytes.slice();
}

/**
 * Picks the execution providers. For cuda/auto the proof is a real session: ORT can list a 'cuda'
 * backend whose libraries are not installed, so only creating a session on it shows CUDA works.
 * A failure there is re-tried on the CPU, so that a corrupt graph is reported as such and not as
 * missing CUDA.
 */
async function chooseProviders(
  device: Device,
  encoder: Uint8Array,
  encoderPath: string,
  base: NodeSessionOptions,
  log: (message: string) => void,
): Promise<{ providers: string[]; encoderSession?: InferenceSession }> {
  if (device === 'cpu') return { providers: ['cpu'] };
  const listed = listedExecutionProviders();
  let reason: string;
  if (listed && !listed.includes('cuda')) {
    reason = `this onnxruntime-node build (${process.platform}-${process.arch}) has no CUDA backend`;
  } else {
    try {
      const session = await createNodeSession(encoder, { ...base, executionProviders: ['cuda'] });
      return { providers: ['cuda', 'cpu'], encoderSession: session };
    } catch (err) {
      reason = `creating a session with the 'cuda' execution provider failed: ${firstLine(err)}`;
    }
    try {
      await (await createNodeSession(encoder, { ...base, executionProviders: ['cpu'] })).release();
    } catch (err) {
      throw new Error(`${encoderPath}: not a loadable ONNX encoder graph (${firstLine(err)})`, { cause: err });
    }
  }
  if (device === 'cuda')
    throw new Error(`--device cuda: CUDA is not available: ${reason}. It needs ${CUDA_REQUIREMENTS}.`);
  log(`--device auto: CUDA is not available (${reason}); running on the CPU`);
  return { providers: ['cpu'] };
}

/** ORT errors can carry a native log dump with colour codes; the first clean line is the message. */
function firstLine(err: unknown): string {
  // eslint-disable-next-line no-control-regex -- stripping ANSI colour escapes is the point
  const text = String((err as Error)?.message ?? err).replace(/\u001b\[[0-9;]*m/g, '');
  return text.split('\n')[0]!.trim();
}
