import type { InferenceSession, Tensor } from 'onnxruntime-common';
import { TokenSampler, type SamplingOptions } from '../decode/sampling.ts';
import type { Tokenizer } from '../text/tokenize.ts';
import { SPECIALS, Vocabulary } from '../vocab.ts';
import { checkLmGraph } from './card-checks.ts';
import { cardTokenizer } from './card-tokenizer.ts';
import type { LmCard } from './lm-card.ts';
import { hostTensor, planRowMoves, reorderRowsInPlace } from './row-state.ts';
import type { Ort } from './seq2seq-types.ts';

/**
 * A language model exported by frost (one step graph, see lm-card.ts) run with onnxruntime: score
 * a text (its log-probability and perplexity) and complete one. Text is read as training read a
 * corpus line: the tokeniser's tokens, preceded by `</s>` (the end of the line before it in the
 * stream) and, when scored, followed by `</s>`.
 *
 * Isomorphic: the caller passes onnxruntime-node or onnxruntime-web and the graph bytes.
 */
export interface LmScore {
  tokens: string[];
  /** log P(token | the tokens before it), natural log, one per token then `</s>`. */
  tokenLogProbs: number[];
  /** Σ tokenLogProbs. */
  logProb: number;
  /** exp(−logProb / scored tokens), `</s>` counted. */
  perplexity: number;
}

export interface CompleteOptions extends SamplingOptions {
  /** Tokens to generate at most. */
  maxNewTokens: number;
  /** `</s>` is not picked before this many tokens (a stop token still ends the row). @default 0 */
  minNewTokens?: number;
  /** Stop after any of these tokens is generated (it is kept in the text); `</s>` always stops. */
  stop?: readonly string[];
  /** Called with each new token as it is picked (streaming). */
  onToken?: (token: string) => void;
  /** Stops between steps when aborted (the request's deadline or the client hanging up), rejecting with its reason. */
  signal?: AbortSignal;
}

/** One row of {@link LmRuntime.completeEach}: a prompt and its own sampling settings. */
export interface CompletionRequest extends SamplingOptions {
  text: string;
  maxNewTokens: number;
  /** `</s>` is not picked before this many tokens. @default 0 */
  minNewTokens?: number;
  stop?: readonly string[];
}

/** Per-row callbacks of a batch of rows. */
export interface LmBatchHooks<Out> {
  /** Stops the whole batch between steps, rejecting with its reason. */
  signal?: AbortSignal;
  /** Rows whose request has gone (its deadline, its client) are dropped from the batch between steps. */
  cancelled?(row: number): boolean;
  /** A row's result, as soon as the row ends. */
  onDone?(row: number, result: Out): void;
}

export interface Completion {
  /** The generated continuation, detokenised (the prompt is not repeated). */
  text: string;
  tokens: string[];
  /** Σ log P of the generated tokens under the model (before temperature and filtering). */
  logProb: number;
  finishReason: 'eos' | 'stop' | 'length';
}

export interface LmRuntimeInit {
  ort: Ort;
  card: LmCard;
  /** The step graph's bytes. */
  step: Uint8Array;
  /** Makes the session. @default `ort.InferenceSession.create(bytes, sessionOptions)` (the browser's way) */
  createSession?: (bytes: Uint8Array) => Promise<InferenceSession>;
  /** Options of the default session factory (execution providers, ...). */
  sessionOptions?: InferenceSession.SessionOptions;
  /** Reads another file the card names (subword models). */
  files?: (file: string) => Promise<Uint8Array>;
  locate?: (file: string) => string;
}

type State = Record<string, Tensor>;

export class LmRuntime {
  readonly vocab: Vocabulary;
  private readonly lang: string;

  private constructor(
    private readonly ort: Ort,
    readonly card: LmCard,
    private readonly session: InferenceSession,
    readonly tokenizer: Tokenizer,
  ) {
    this.vocab = Vocabulary.fromJSON(card.target.tokens);
    this.lang = card.target.lang;
  }

  /** @throws Error naming the card when the graph's inputs or outputs differ from what it says */
  static async create(init: LmRuntimeInit): Promise<LmRuntime> {
    const { card, ort } = init;
    const session = await (
      init.createSession ?? ((bytes) => ort.InferenceSession.create(bytes, init.sessionOptions ?? {}))
    )(init.step);
    try {
      checkLmGraph(card, session, (init.locate ?? ((f) => f))(card.graphs.step.file));
    } catch (err) {
      await session.release().catch(() => undefined);
      throw err;
    }
    const tokenizer = await cardTokenizer(card, init.files, init.locate ?? ((f) => f));
    return new LmRuntime(ort, card, session, tokenizer);
  }

  /** The text's tokens as the model reads them (the card's tokeniser; unknown words are `<unk>`). */
  tokenize(text: string): string[] {
    return this.tokenizer.tokenize(text, this.lang);
  }

  private zeroState(rows: number): State {
    const { state, stateSize } = this.card.graphs.step;
    return Object.fromEntries(
      state.map((n) => [n, new this.ort.Tensor('float32', new Float32Array(rows * stateSize), [rows, stateSize])]),
    );
  }

  /** One step for `tokens.length` rows: their log-probabilities [rows, |V|] and next state. */
  private async step(tokens: readonly number[], state: State): Promise<{ logProbs: Float32Array; state: State }> {
    const g = this.card.graphs.step;
    const out = await this.session.run({
      [g.token]: new this.ort.Tensor(
        'int64',
        BigInt64Array.from(tokens, (t) => BigInt(t)),
        [tokens.length],
      ),
      ...state,
    });
    return {
      logProbs: out[g.logProbs].data as Float32Array,
      state: Object.fromEntries(g.state.map((n) => [n, out[`next_${n}`]])),
    };
  }

  /**
   * Runs rows of different lengths as one batch: each row feeds its own next token until it says it
   * is done (`next` returns undefined), and is then dropped from the batch, so rows finish on their own.
   * `next(row, logProbs, offset)` gets the row's log-probabilities after its last token (none before the first).
   */
  private async runRows(
    rows: number,
    next: (row: number, logProbs: Float32Array | undefined, offset: number) => number | undefined,
    cancelled: (row: number) => boolean,
  ): Promise<void> {
    let live = Array.from({ length: rows }, (_, r) => r);
    let state = this.zeroState(rows);
    let logProbs: Float32Array | undefined;
    const V = this.vocab.size;
    while (live.length > 0) {
      const tokens: number[] = [];
      const keep: number[] = [];
      live.forEach((row, i) => {
        const t = cancelled(row) ? undefined : next(row, logProbs, i * V);
        if (t === undefined) return;
        tokens.push(t);
        keep.push(i);
      });
      if (keep.length === 0) return;
      if (keep.length < live.length) {
        // Finished rows leave the batch, so a batch costs what its live rows cost. The state is this
        // loop's own (zeroState's or the last step's, used once), so it is compacted in place.
        const order = Int32Array.from(keep);
        const moves = planRowMoves(order);
        state = Object.fromEntries(
          Object.entries(state).map(([n, t]) => [
            n,
            reorderRowsInPlace(this.ort, hostTensor(t, n, live.length), order, undefined, moves),
          ]),
        );
      }
      live = keep.map((i) => live[i]);
      const out = await this.step(tokens, state);
      state = out.state;
      logProbs = out.logProbs;
    }
  }

  /** log P(text) under the model, token by token, `</s>` included. */
  async score(text: string, signal?: AbortSignal): Promise<LmScore> {
    return (await this.scoreEach([text], { signal }))[0];
  }

  /**
   * Scores texts as one batch of rows of their own lengths; each result is reported through
   * `onDone` as soon as its row ends, and is the same as scoring the text alone.
   */
  async scoreEach(texts: readonly string[], hooks: LmBatchHooks<LmScore> = {}): Promise<LmScore[]> {
    const rows = texts.map((text) => {
      const tokens = this.tokenize(text);
      const ids = [...Array.from(this.vocab.encode(tokens)), SPECIALS.eos.id];
      return { tokens, ids, tokenLogProbs: [] as number[] };
    });
    const results: LmScore[] = new Array(texts.length);
    await this.runRows(
      rows.length,
      (r, logProbs, offset) => {
        const row = rows[r];
        const fed = row.tokenLogProbs.length;
        if (logProbs) row.tokenLogProbs.push(logProbs[offset + row.ids[fed]]);
        // Fed so far: `</s>` then ids[0..fed); the row ends once every id has its log-probability.
        const done = row.tokenLogProbs.length;
        if (done === row.ids.length) {
          const logProb = row.tokenLogProbs.reduce((a, b) => a + b, 0);
          results[r] = {
            tokens: row.tokens,
            tokenLogProbs: row.tokenLogProbs,
            logProb,
            perplexity: Math.exp(-logProb / row.ids.length),
          };
          hooks.onDone?.(r, results[r]);
          return undefined;
        }
        return done === 0 && !logProbs ? SPECIALS.eos.id : row.ids[done - 1];
      },
      (r) => this.isCancelled(r, hooks),
    );
    hooks.signal?.throwIfAborted();
    return results;
  }

  /** Continues `text` (greedy, or sampled with a seed: the same seed gives the same completion). */
  async complete(text: string, opts: CompleteOptions): Promise<Completion> {
    const { signal, onToken, ...request } = opts;
    return (await this.completeEach([{ text, ...request }], { signal, onToken: (_, token) => onToken?.(token) }))[0];
  }

  /**
   * Completes texts as one batch: each row has its own sampler (so a seeded row is the same alone
   * or batched), and ends on its own at `</s>`, a stop token or its `maxNewTokens`.
   */
  async completeEach(
    requests: readonly CompletionRequest[],
    hooks: LmBatchHooks<Completion> & { onToken?(row: number, token: string): void } = {},
  ): Promise<Completion[]> {
    // Never emitted: padding, <s> (not in a stream) and <unk> (not a word to show).
    const banned = new Set<number>([SPECIALS.pad.id, SPECIALS.bos.id, SPECIALS.unk.id]);
    const bannedEarly = new Set<number>([...banned, SPECIALS.eos.id]);
    for (const req of requests) {
      const min = req.minNewTokens ?? 0;
      if (!Number.isInteger(min) || min < 0 || min > req.maxNewTokens)
        throw new RangeError(`minNewTokens must be an integer in [0, maxNewTokens = ${req.maxNewTokens}], got ${min}`);
    }
    const rows = requests.map((req) => ({
      req,
      sampler: new TokenSampler(req),
      feed: [SPECIALS.eos.id, ...Array.from(this.vocab.encode(this.tokenize(req.text)))],
      fed: 0,
      stops: new Set((req.stop ?? []).map((s) => this.vocab.id(s)).filter((id) => id !== SPECIALS.unk.id)),
      generated: [] as number[],
      logProb: 0,
    }));
    const results: Completion[] = new Array(requests.length);
    const finish = (r: number, finishReason: Completion['finishReason']) => {
      const tokens = this.vocab.decode(rows[r].generated, { stripSpecials: true });
      const text = this.tokenizer.detokenize(tokens, this.lang);
      results[r] = { text, tokens, logProb: rows[r].logProb, finishReason };
      hooks.onDone?.(r, results[r]);
      return undefined;
    };
    await this.runRows(
      rows.length,
      (r, logProbs, offset) => {
        const row = rows[r];
        if (row.fed < row.feed.length) return row.feed[row.fed++];
        if (row.generated.length >= row.req.maxNewTokens) return finish(r, 'length');
        const early = row.generated.length < (row.req.minNewTokens ?? 0);
        const next = row.sampler.pick(logProbs!, offset, this.vocab.size, early ? bannedEarly : banned);
        row.logProb += logProbs![offset + next];
        if (next === SPECIALS.eos.id) return finish(r, 'eos');
        row.generated.push(next);
        hooks.onToken?.(r, this.vocab.token(next));
        if (row.stops.has(next)) return finish(r, 'stop');
        if (row.generated.length >= row.req.maxNewTokens) return finish(r, 'length');
        return next;
      },
      (r) => this.isCancelled(r, hooks),
    );
    hooks.signal?.throwIfAborted();
    return results;
  }

  /** Frees the session; call it once nothing runs on it. */
  async release(): Promise<void> {
    await this.session.release();
  }

  private isCancelled(row: number, hooks: LmBatchHooks<unknown>): boolean {
    return Boolean(hooks.signal?.aborted || hooks.cancelled?.(row));
  }
}
