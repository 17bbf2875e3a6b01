/**
 * The HTTP API's request and response bodies as they travel (snake_case, as on the wire), shared by
 * the server (serve/) and its clients (the browser page). Types only: serve/schemas.ts validates
 * requests against them, and test/wire-types.test.ts checks that the two agree.
 */
import type { LmCard } from './runtime/lm-card.ts';
import type { ModelCard } from './runtime/model-card.ts';

/** A card as `GET /v1/models` lists it: the vocabularies replaced by their sizes. */
export type ModelSummary = Omit<ModelCard, 'source' | 'target'> & {
  source?: { lang: string; size: number };
  target: { lang: string; size: number };
};

/** A language model's card as `GET /v1/models` lists it: the vocabulary replaced by its size. */
export type LmModelSummary = Omit<LmCard, 'target'> & { target: { lang: string; size: number } };

/** The body of a `GET /v1/models` answer. */
export interface ModelsResponse {
  /** The model requests without `model` go to, if any. */
  default: string | null;
  models: ModelSummary[];
  /** Language models (`POST /v1/complete`, `/v1/score`); absent when the server has none. */
  language_models?: LmModelSummary[];
  /** The language model requests to those routes without `model` go to, if any. */
  default_language_model?: string | null;
  /** Model folders that could not be loaded, and why; absent when there are none (also in `/readyz`). */
  refused?: FolderRefusal[];
}

/** A model folder the server refused: its path under `--models`, and the reason. */
export interface FolderRefusal {
  folder: string;
  reason: string;
}

/** The body of a `POST /v1/translate` request: exactly one of `text` and `texts`. */
export interface TranslateRequestBody {
  /** @default the server's default model */
  model?: string;
  text?: string;
  texts?: string[];
  /** @default n_best (1: greedy) */
  beam?: number;
  /** @default 1 */
  n_best?: number;
  max_len?: number;
  length_penalty?: number;
  /** Let a word-level model emit `<unk>`. @default false */
  allow_unk?: boolean;
}

/**
 * One hypothesis of a translation on the wire. A hypothesis the model gave zero probability has
 * score and log_prob -Infinity, which JSON writes as null.
 */
export interface WireHypothesis {
  text: string;
  score: number;
  log_prob: number;
}

/** The body of a `POST /v1/translate` answer. */
export interface TranslateResponse {
  model: string;
  translations: Array<WireHypothesis & { n_best?: WireHypothesis[] }>;
  timing: { total_ms: number; tokens: number };
}

/** The body of a `POST /v1/caption` answer. */
export interface CaptionResponse {
  model: string;
  caption: string;
  tokens: string[];
  /** Length-normalised log-probability of the caption. */
  score: number;
  /** The uploaded image as decoded (after EXIF orientation), before preprocessing. */
  image: { width: number; height: number; format: 'jpeg' | 'png' };
  timing: { total_ms: number };
}

/**
 * The body of a `POST /v1/complete` request (language models). Greedy unless `temperature`, `top_k`
 * or `top_p` is given; a sampling request without `seed` gets one, returned in the answer.
 */
export interface CompleteRequestBody {
  /** @default the server's default language model */
  model?: string;
  text: string;
  /** 1..256. @default 32 */
  max_new_tokens?: number;
  /** `</s>` is not picked before this many tokens; at most `max_new_tokens`. @default 0 */
  min_new_tokens?: number;
  /** At least 0.001 (core/decode/sampling.ts MIN_TEMPERATURE); sampling. */
  temperature?: number;
  top_k?: number;
  /** In (0, 1]. */
  top_p?: number;
  /** 0..2^32−1: the same seed, text and options give the same completion. */
  seed?: number;
  /** Tokens that end the completion (kept in it); `</s>` always ends it. */
  stop?: string[];
}

/** The body of a `POST /v1/complete` answer (or the `result` event of `?stream=1`, after `token` events). */
export interface CompleteResponse {
  model: string;
  /** The continuation only (the prompt is not repeated). */
  completion: string;
  tokens: string[];
  /** Σ natural-log probability of the generated tokens under the model. */
  log_prob: number;
  finish_reason: 'eos' | 'stop' | 'length';
  /** The seed the draws used (sampling only). */
  seed?: number;
  timing: { total_ms: number; tokens: number };
}

/** The body of a `POST /v1/score` request. */
export interface ScoreRequestBody {
  model?: string;
  text: string;
}

/** The body of a `POST /v1/score` answer: the text's log-probability, `</s>` included. */
export interface ScoreResponse {
  model: string;
  tokens: string[];
  /** One per token, then one for `</s>`. */
  token_log_probs: number[];
  log_prob: number;
  perplexity: number;
  timing: { total_ms: number };
}

/** The body of every error answer (serve/errors.ts fills it from its catalogue). */
export interface ErrorResponse {
  /** The HTTP reason phrase, e.g. "Bad Request". */
  error: string;
  /** A `FROST_ERR_*` code from the server's catalogue. */
  code: string;
  message: string;
  statusCode: number;
  /** The request's id (also in the `x-request-id` header), to find it in the server's log. */
  request_id?: string;
}
