/**
 * The public types of the translation runtime (seq2seq.ts): what it is created from and what it
 * returns. Types only, so the browser client and the server can name them without the runtime.
 */
import type { InferenceSession } from 'onnxruntime-common';
import type { ModelCard } from './model-card.ts';

/** The ORT module (ort-node.ts's `ort`, or an onnxruntime-web build from ort-web.ts), typed by their shared API. */
export type Ort = typeof import('onnxruntime-common');

/** Which of the two graphs a session is for. */
export type GraphRole = 'encoder' | 'decoder';

/** Creates a session from model bytes; lets callers pick execution providers, threads, etc. */
export type SessionFactory = (bytes: Uint8Array, role: GraphRole) => Promise<InferenceSession>;

/** Fetches a file named in the card (`graphs.encoder.file`, ...) relative to the model's location. */
export type GraphLoader = (file: string) => Promise<Uint8Array>;

/** Everything {@link Seq2SeqRuntime.create} needs. */
export interface Seq2SeqRuntimeInit {
  /** The ORT module to run with. */
  ort: Ort;
  /** A parsed, validated card (see `parseModelCard`). */
  card: ModelCard;
  /** The two graphs' bytes, or a loader for the files the card names. */
  graphs: { encoder: Uint8Array; decoder: Uint8Array } | GraphLoader;
  /** @default `(bytes) => ort.InferenceSession.create(bytes, sessionOptions)` */
  createSession?: SessionFactory;
  /** Options for the default session factory (ignored when `createSession` is given). */
  sessionOptions?: InferenceSession.SessionOptions;
  /**
   * How a card-relative file is named in error messages (a path or URL), so a corrupt graph is
   * reported where it lives. @default the file name itself
   */
  locate?: (file: string) => string;
  /** Reads other files the card names (its subword `.model` files). @default `graphs` when that is a loader */
  files?: GraphLoader;
}

/** One hypothesis of a translation. */
export interface TranslationHypothesis {
  /** Detokenised output. */
  text: string;
  /** Output tokens (target vocabulary strings), without <s> and </s>. */
  tokens: string[];
  /** Length-normalised score that n-best lists are ranked by. */
  score: number;
  /** Sum of token log-probabilities, </s> included. */
  logProb: number;
}

/** The best hypothesis of one input, plus all `nBest` of them (best first) when more than one was asked for. */
export interface Translation extends TranslationHypothesis {
  nBest?: TranslationHypothesis[];
}

/** Callbacks of {@link Seq2SeqRuntime.translateEach}; inputs are numbered as the texts. */
export interface TranslateHooks {
  /** Inputs whose best prefix is reported through `onPrefix` (detokenising costs; ask only for what is streamed). */
  prefixInputs?: ReadonlySet<number>;
  /** After every step, the detokenised best live prefix of an input in `prefixInputs`. */
  onPrefix?(input: number, text: string): void;
  /** Once per input, as soon as its search is over (other inputs of the batch may still be decoding). */
  onDone?(input: number, translation: Translation): void;
}
