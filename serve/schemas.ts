import { z } from 'zod';
import { DEFAULT_MAX_PIXELS, DEFAULT_MAX_SIDE } from '../core/image/sniff.ts';
import type { SearchOptions } from '../core/decode/types.ts';
import { describeIssues } from '../core/zod-issues.ts';
import { clip } from './errors.ts';
import { HttpError } from './errors.ts';

/** Per-request limits, so one request cannot hold the decoder for minutes. */
export interface RequestLimits {
  /**
   * Longest accepted text, in Unicode code points (an emoji is one, as in JSON Schema's
   * `maxLength`, which /openapi.json states it as). @default 1000
   */
  maxTextChars: number;
  /** Most texts in one request. @default 32 */
  maxBatch: number;
  /** Largest accepted JSON body in bytes; larger bodies get a 413 before they are parsed. @default 1 MiB */
  maxBodyBytes: number;
  /** Longest a request may take from arrival to answer; past it, 504 FROST_ERR_TIMEOUT. @default 30 s */
  timeoutMs: number;
  /**
   * Largest image file `POST /v1/caption` accepts (413 FROST_ERR_IMAGE_TOO_LARGE past it; as JSON,
   * base64 may be 4/3 of it). Half the CLI's 20 MiB: a server holds many uploads at once. @default 10 MiB
   */
  maxImageBytes: number;
  /** Largest width × height accepted, read from the image's header before it is decoded. @default 25 megapixels */
  maxImagePixels: number;
  /** Longest accepted width or height, read from the header too. @default 12,000 */
  maxImageSide: number;
}

export const DEFAULT_LIMITS: Readonly<RequestLimits> = {
  maxTextChars: 1000,
  maxBatch: 32,
  maxBodyBytes: 2 ** 20,
  timeoutMs: 30_000,
  maxImageBytes: 10 * 1024 * 1024,
  maxImagePixels: DEFAULT_MAX_PIXELS,
  maxImageSide: DEFAULT_MAX_SIDE,
};

/** Largest beam the server accepts: beam cost grows linearly and the n-best list with it. */
export const MAX_BEAM = 16;
/** Longest output the server decodes. */
const MAX_OUTPUT_LEN = 512;
/**
 * Largest |length_penalty|: scores divide by len^penalty, and with len up to 513 a penalty of 10 is
 * already 10^27; past that the scores overflow to Infinity or 0 and the answer's score is null.
 */
const MAX_LENGTH_PENALTY = 10;
/** Longest model name accepted; card names are short, and a name is echoed in messages. */
const MAX_MODEL_NAME = 128;

/** Anything but spaces and format characters (zero-width space and joiners, BOM, soft hyphen, direction marks). */
const VISIBLE = /[^\p{White_Space}\p{Cf}]/u;

/**
 * Whether `s` holds a character that is neither a space nor a format character. Stops at the first one, where
 * stripping the invisible ones and measuring what is left copied every text of every request.
 */
export function hasVisibleChar(s: string): boolean {
  return VISIBLE.test(s);
}

/** A model name as requests give it. */
export const modelName = z
  .string()
  .min(1, 'must be a non-empty string')
  .max(MAX_MODEL_NAME, `must be at most ${MAX_MODEL_NAME} characters`);

/** A validated `POST /v1/translate` request, camelCase, with options ready for search. */
export interface TranslateRequest {
  /** The model name, or undefined for the registry's default. */
  model: string | undefined;
  texts: string[];
  /** True when the request used `text` (one string) rather than `texts`. */
  single: boolean;
  options: SearchOptions;
}

/** Builds the JSON schema of `POST /v1/translate` bodies under the given limits (snake_case, as on the wire). */
export function translateBodySchema(limits: RequestLimits) {
  // zod's max() counts code points, as JSON Schema's maxLength does.
  const text = z
    .string()
    .max(limits.maxTextChars, `must be at most ${limits.maxTextChars} characters (code points)`)
    .refine(hasVisibleChar, 'must be a non-empty string (spaces and zero-width characters do not count)');
  return z
    .strictObject({
      model: modelName.optional(),
      text: text.optional(),
      texts: z
        .array(text)
        .min(1, 'must hold at least one text')
        .max(limits.maxBatch, `must hold at most ${limits.maxBatch} texts`)
        .optional(),
      beam: z.int().min(1).max(MAX_BEAM).optional(),
      n_best: z.int().min(1).max(MAX_BEAM).optional(),
      max_len: z.int().min(1).max(MAX_OUTPUT_LEN).optional(),
      length_penalty: z.number().min(-MAX_LENGTH_PENALTY).max(MAX_LENGTH_PENALTY).optional(),
      /** Let a word-level model emit `<unk>` (off by default; subword models never need it). */
      allow_unk: z.boolean().optional(),
    })
    .superRefine((body, ctx) => {
      if ((body.text === undefined) === (body.texts === undefined)) {
        ctx.addIssue({ code: 'custom', path: ['text'], message: 'give exactly one of "text" or "texts"' });
      }
      if (body.n_best !== undefined && body.beam !== undefined && body.n_best > body.beam) {
        ctx.addIssue({ code: 'custom', path: ['n_best'], message: `must be <= beam (${body.beam})` });
      }
    });
}

/**
 * A request's zod issues as one line naming each offending field, e.g. `texts.1: must be a non-empty string`. The
 * client's own strings in it (unknown keys) are clipped and counted, so that a 900 kB key gets an answer under 1 kB.
 */
export const formatIssues = (issues: readonly z.core.$ZodIssue[]): string =>
  describeIssues(issues.slice(0, 8).map(withClippedKeys), { whole: '(body)' }) +
  (issues.length > 8 ? ` (and ${issues.length - 8} more)` : '');

/** An unknown-keys issue names at most 3 keys, each clipped; any other issue is as zod wrote it. */
function withClippedKeys(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'unrecognized_keys') return issue;
  const named = issue.keys.slice(0, 3).map((k) => `'${clip(k)}'`);
  const more = issue.keys.length > 3 ? ` and ${issue.keys.length - 3} more` : '';
  return { ...issue, message: `unknown key${issue.keys.length > 1 ? 's' : ''} ${named.join(', ')}${more}` };
}

/** Schemas are built once per limits object, not per request. */
const schemaCache = new WeakMap<RequestLimits, ReturnType<typeof translateBodySchema>>();

/**
 * Validates a raw body and maps it to camelCase search options at the boundary.
 * Without `beam`, the beam is `n_best` (so asking for 3 alternatives just works), else greedy.
 * @throws HttpError FROST_ERR_INVALID_REQUEST naming every offending field
 */
export function parseTranslateRequest(body: unknown, limits: RequestLimits): TranslateRequest {
  let schema = schemaCache.get(limits);
  if (!schema) schemaCache.set(limits, (schema = translateBodySchema(limits)));
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new HttpError('FROST_ERR_INVALID_REQUEST', { issues: formatIssues(parsed.error.issues) });
  const b = parsed.data;
  const nBest = b.n_best ?? 1;
  const options: SearchOptions = { beam: b.beam ?? nBest, nBest };
  if (b.max_len !== undefined) options.maxLen = b.max_len;
  if (b.length_penalty !== undefined) options.lengthPenalty = b.length_penalty;
  if (b.allow_unk !== undefined) options.allowUnk = b.allow_unk;
  return {
    model: b.model,
    texts: b.texts ?? [b.text as string],
    single: b.texts === undefined,
    options,
  };
}
