/**
 * The messages between the server's main thread and a decode thread (serve/decode-worker.ts).
 * A thread loads one model directory, answers `ready` (or `load-failed`), then decodes batches:
 * texts for a translation model, preprocessed images for a caption model. Per batch it sends
 * `prefix` and `done` (or `captioned`) messages as the search goes, then `finished` or `failed`.
 */
import type { SearchOptions } from '../core/decode/types.ts';
import type { Caption, CaptionOptions } from '../core/runtime/caption.ts';
import type { Device } from '../core/runtime/load-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { Translation } from '../core/runtime/seq2seq.ts';

/** The `workerData` of a decode thread: what to load and how. */
export interface DecodeWorkerData {
  dir: string;
  device: Device;
  intraOpNumThreads: number;
}

/** Search options as they cross the thread boundary: plain values only (no logits processors). */
export type WireSearchOptions = Omit<SearchOptions, 'logitsProcessors'>;

export type ToWorker =
  | { type: 'translate'; id: number; texts: string[]; options: WireSearchOptions; prefixInputs: number[] }
  /** Each image a [3, size, size] Float32Array; their buffers are transferred, not copied. */
  | { type: 'caption'; id: number; images: Float32Array[]; options: CaptionOptions }
  /** Release the sessions and end the thread; sent once no batch is in flight. */
  | { type: 'release' };

export type FromWorker =
  | { type: 'ready'; card: ModelCard }
  | { type: 'load-failed'; message: string }
  /** A note from loading (the CUDA fallback of `--device auto`). */
  | { type: 'log'; message: string }
  | { type: 'prefix'; id: number; input: number; text: string }
  | { type: 'done'; id: number; input: number; translation: Translation }
  | { type: 'captioned'; id: number; input: number; caption: Caption }
  | { type: 'finished'; id: number }
  | { type: 'failed'; id: number; message: string; stack?: string };
