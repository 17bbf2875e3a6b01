/**
 * The messages between the server's main thread and a decode thread (serve/decode-worker.ts).
 * A thread loads one model directory, answers `ready` (or `load-failed`), then decodes batches:
 * texts for a translation model, preprocessed images for a caption model, texts to score or
 * prompts to complete for a language model. Per batch it sends `prefix` (a translation's best
 * prefix, or a completion's next token) and `done` (`captioned`, `scored`, `completed`) messages
 * as the batch goes, then `finished` or `failed`.
 */
import type { SearchOptions } from '../core/decode/types.ts';
import type { Caption, CaptionOptions } from '../core/runtime/caption.ts';
import type { Completion, CompletionRequest, LmScore } from '../core/runtime/lm.ts';
import type { LmCard } from '../core/runtime/lm-card.ts';
import type { Device } from '../core/runtime/load-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { Translation } from '../core/runtime/seq2seq.ts';

/** The `workerData` of a decode thread: what to load and how. */
export interface DecodeWorkerData {
  dir: string;
  device: Device;
  intraOpNumThreads: number;
  /** The model's graphs in shared memory, read once by the main thread (serve/shared-graphs.ts). */
  graphs?: ReadonlyMap<string, Uint8Array>;
}

/** Search options as they cross the thread boundary: plain values only (no logits processors). */
export type WireSearchOptions = Omit<SearchOptions, 'logitsProcessors'>;

export type ToWorker =
  | { type: 'translate'; id: number; texts: string[]; options: WireSearchOptions; prefixInputs: number[] }
  /** Each image a [3, size, size] Float32Array; their buffers are transferred, not copied. */
  | { type: 'caption'; id: number; images: Float32Array[]; options: CaptionOptions }
  | { type: 'score'; id: number; texts: string[] }
  /** `stream`: the rows whose tokens are wanted one by one (as `prefix` messages). */
  | { type: 'complete'; id: number; requests: CompletionRequest[]; stream: number[] }
  /** Rows of batch `id` whose requests have gone: dropped between two steps. */
  | { type: 'cancel'; id: number; rows: number[] }
  /** Release the sessions and end the thread; sent once no batch is in flight. */
  | { type: 'release' };

/** The messages that start a batch; which of them a thread decodes is its model family's (serve/served-family.ts). */
export type BatchMessage = Exclude<ToWorker, { type: 'cancel' | 'release' }>;

export type FromWorker =
  | { type: 'ready'; card: ModelCard | LmCard }
  | { type: 'load-failed'; message: string }
  /** A note from loading (the CUDA fallback of `--device auto`). */
  | { type: 'log'; message: string }
  | { type: 'prefix'; id: number; input: number; text: string }
  | { type: 'done'; id: number; input: number; translation: Translation }
  | { type: 'captioned'; id: number; input: number; caption: Caption }
  | { type: 'scored'; id: number; input: number; score: LmScore }
  | { type: 'completed'; id: number; input: number; completion: Completion }
  | { type: 'finished'; id: number }
  | { type: 'failed'; id: number; message: string; stack?: string };
