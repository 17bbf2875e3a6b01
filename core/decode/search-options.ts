import { minLength, suppressTokens, type LogitsProcessor } from './logits-processors.ts';
import type { SearchOptions, StepModel } from './types.ts';

/** A step model that may also name its <pad> and <unk> ids, which search then never emits (<unk>: unless allowed). */
export type DecodeModel<State> = StepModel<State> & { readonly pad?: number; readonly unk?: number };

/** Options of {@link generate}: search options plus each input's source length, for the per-input length cap. */
export type GenerateOptions = SearchOptions & {
  /** Source length of each of the batch's inputs; enables the maxLenA * srcLen + maxLenB cap. */
  sourceLengths?: readonly number[];
};

/** Search options after defaults and validation: what the search classes consume. */
export interface ResolvedSearchOptions {
  readonly vocab: number;
  readonly bos: number;
  readonly eos: number;
  readonly beam: number;
  readonly nBest: number;
  readonly lengthPenalty: number;
  /** Cap on output tokens (without </s>) per input; at this length </s> is forced. */
  readonly maxLens: Int32Array;
  /** Built-in processors (suppress <pad>/<s>/<unk>, minLen) followed by the caller's. */
  readonly processors: readonly LogitsProcessor[];
}

/**
 * Applies defaults and validates everything search relies on, once per call, so the per-token
 * loops can trust their inputs. Errors are RangeError/TypeError naming the offending argument.
 */
export function resolveSearchOptions<State>(
  model: DecodeModel<State>,
  batchSize: number,
  opts: GenerateOptions = {},
): ResolvedSearchOptions {
  const vocab = integer('model.vocabSize', model.vocabSize, 1);
  const bos = integer('model.bos', model.bos, 0, vocab - 1);
  const eos = integer('model.eos', model.eos, 0, vocab - 1);
  integer('batchSize', batchSize, 0);
  const beam = integer('beam', opts.beam ?? 1, 1);
  const nBest = integer('nBest', opts.nBest ?? 1, 1);
  if (nBest > beam)
    throw new RangeError(
      `nBest (${nBest}) must not exceed beam (${beam}): search keeps only beam hypotheses per input`,
    );
  const lengthPenalty = finite('lengthPenalty', opts.lengthPenalty ?? 1.0);
  const maxLen = integer('maxLen', opts.maxLen ?? 200, 0);
  const minLen = integer('minLen', opts.minLen ?? 0, 0);
  if (minLen > maxLen) throw new RangeError(`minLen (${minLen}) must not exceed maxLen (${maxLen})`);
  const maxLenA = finite('maxLenA', opts.maxLenA ?? 2);
  const maxLenB = finite('maxLenB', opts.maxLenB ?? 10);
  const padRaw = opts.pad ?? model.pad;
  const pad =
    padRaw === undefined ? undefined : integer(opts.pad !== undefined ? 'pad' : 'model.pad', padRaw, 0, vocab - 1);
  const unkRaw = opts.unk ?? model.unk;
  const unk =
    unkRaw === undefined ? undefined : integer(opts.unk !== undefined ? 'unk' : 'model.unk', unkRaw, 0, vocab - 1);
  if (opts.allowUnk !== undefined && typeof opts.allowUnk !== 'boolean') {
    throw new TypeError(`allowUnk must be a boolean, got ${String(opts.allowUnk)}`);
  }
  const forbidUnk = unk !== undefined && opts.allowUnk !== true;

  const maxLens = new Int32Array(batchSize).fill(maxLen);
  const src = opts.sourceLengths;
  if (src !== undefined) {
    if (!Array.isArray(src)) throw new TypeError('sourceLengths must be an array of integers');
    if (src.length !== batchSize) {
      throw new RangeError(`sourceLengths has ${src.length} entries but batchSize is ${batchSize}`);
    }
    for (let b = 0; b < batchSize; b++) {
      const srcLen = integer(`sourceLengths[${b}]`, src[b], 0);
      const cap = Math.max(0, Math.floor(maxLenA * srcLen + maxLenB));
      // minLen wins over a short source-derived cap, or the two constraints would leave no valid output.
      maxLens[b] = Math.max(minLen, Math.min(maxLen, cap));
    }
  }

  const user = opts.logitsProcessors ?? [];
  if (!Array.isArray(user)) throw new TypeError('logitsProcessors must be an array of functions');
  user.forEach((p, i) => {
    if (typeof p !== 'function') throw new TypeError(`logitsProcessors[${i}] must be a function, got ${typeof p}`);
  });
  // Some vocabularies share one id for <s> and </s>; suppressing it would make </s> unreachable.
  const banned = [bos, ...(pad === undefined ? [] : [pad]), ...(forbidUnk ? [unk] : [])].filter((id) => id !== eos);
  const processors: LogitsProcessor[] = [suppressTokens(banned)];
  if (minLen > 0) processors.push(minLength(eos, minLen));
  processors.push(...user);

  return { vocab, bos, eos, beam, nBest, lengthPenalty, maxLens, processors };
}

function integer(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new TypeError(`${name} must be an integer, got ${String(value)}`);
  }
  if (value < min || value > max) {
    throw new RangeError(`${name} must be in [${min}, ${max}], got ${value}`);
  }
  return value;
}

function finite(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TypeError(`${name} must be a finite number, got ${String(value)}`);
  }
  return value;
}
