import { z } from 'zod';
import { MIN_TEMPERATURE, type SamplingOptions } from '../core/decode/sampling.ts';
import { HttpError } from './errors.ts';
import { formatIssues, hasVisibleChar, modelName, type RequestLimits } from './schemas.ts';

/**
 * `POST /v1/complete` and `POST /v1/score` bodies (snake_case, as on the wire; core/wire.ts has
 * their types). The text limit, body size and timeout are the translate route's (schemas.ts).
 */

/** Most tokens one completion may generate. */
export const MAX_NEW_TOKENS = 256;
/** Tokens a completion generates at most when the request does not say. */
const DEFAULT_MAX_NEW_TOKENS = 32;
/** Stop tokens per request, and their length. */
const MAX_STOP = 16;
const MAX_STOP_CHARS = 64;
/** Largest top_k: beyond the vocabulary it is the whole vocabulary anyway. */
const MAX_TOP_K = 100_000;

const textSchema = (limits: RequestLimits) =>
  z
    .string()
    .max(limits.maxTextChars, `must be at most ${limits.maxTextChars} characters (code points)`)
    .refine(hasVisibleChar, 'must be a non-empty string (spaces and zero-width characters do not count)');

export function completeBodySchema(limits: RequestLimits) {
  return z
    .strictObject({
      model: modelName.optional(),
      text: textSchema(limits),
      max_new_tokens: z.int().min(1).max(MAX_NEW_TOKENS).optional(),
      /** `</s>` is not picked before this many tokens (at most max_new_tokens). */
      min_new_tokens: z.int().min(0).max(MAX_NEW_TOKENS).optional(),
      /** Sampling when given (at least MIN_TEMPERATURE: below it, greedy in all but name); greedy without it. */
      temperature: z
        .number()
        .min(MIN_TEMPERATURE, `must be at least ${MIN_TEMPERATURE} (leave temperature out for greedy decoding)`)
        .max(100)
        .optional(),
      top_k: z.int().min(1).max(MAX_TOP_K).optional(),
      top_p: z.number().gt(0, 'must be in (0, 1]').max(1, 'must be in (0, 1]').optional(),
      seed: z.int().min(0).max(0xffff_ffff).optional(),
      stop: z
        .array(z.string().min(1).max(MAX_STOP_CHARS))
        .max(MAX_STOP, `must hold at most ${MAX_STOP} tokens`)
        .optional(),
    })
    .refine((b) => (b.min_new_tokens ?? 0) <= (b.max_new_tokens ?? DEFAULT_MAX_NEW_TOKENS), {
      message: 'must not exceed max_new_tokens',
      path: ['min_new_tokens'],
    });
}

export function scoreBodySchema(limits: RequestLimits) {
  return z.strictObject({ model: modelName.optional(), text: textSchema(limits) });
}

export interface CompleteRequest {
  model: string | undefined;
  text: string;
  maxNewTokens: number;
  minNewTokens: number;
  sampling: SamplingOptions;
  /** True when the request samples (the answer then says which seed it used). */
  sampled: boolean;
  stop: string[];
}

const completeCache = new WeakMap<RequestLimits, ReturnType<typeof completeBodySchema>>();
const scoreCache = new WeakMap<RequestLimits, ReturnType<typeof scoreBodySchema>>();

/**
 * @param randomSeed the seed a sampling request without one gets (returned in the answer, so it can be replayed)
 * @throws HttpError FROST_ERR_INVALID_REQUEST naming every offending field
 */
export function parseCompleteRequest(body: unknown, limits: RequestLimits, randomSeed: () => number): CompleteRequest {
  let schema = completeCache.get(limits);
  if (!schema) completeCache.set(limits, (schema = completeBodySchema(limits)));
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new HttpError('FROST_ERR_INVALID_REQUEST', { issues: formatIssues(parsed.error.issues) });
  const b = parsed.data;
  // top_k / top_p filter a sampling distribution: asking for them samples at temperature 1.
  const sampled = b.temperature !== undefined || b.top_k !== undefined || b.top_p !== undefined;
  const sampling: SamplingOptions = sampled
    ? { temperature: b.temperature ?? 1, topK: b.top_k, topP: b.top_p, seed: b.seed ?? randomSeed() }
    : {};
  return {
    model: b.model,
    text: b.text,
    maxNewTokens: b.max_new_tokens ?? DEFAULT_MAX_NEW_TOKENS,
    minNewTokens: b.min_new_tokens ?? 0,
    sampling,
    sampled,
    stop: b.stop ?? [],
  };
}

export function parseScoreRequest(body: unknown, limits: RequestLimits): { model: string | undefined; text: string } {
  let schema = scoreCache.get(limits);
  if (!schema) scoreCache.set(limits, (schema = scoreBodySchema(limits)));
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new HttpError('FROST_ERR_INVALID_REQUEST', { issues: formatIssues(parsed.error.issues) });
  return { model: parsed.data.model, text: parsed.data.text };
}
