import type { InferenceSession, Tensor } from 'onnxruntime-common';
import { TokenSampler, type SamplingOptions } from '../decode/sampling.ts';
import type { Tokenizer } from '../text/tokenize.ts';
import { SPECIALS, Vocabulary } from '../vocab.ts';
import { cardTokenizer } from './card-tokenizer.ts';
import type { LmCard } from './lm-card.ts';
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
  /** Stop after any of these tokens is generated (it is kept in the text); `</s>` always stops. */
  stop?: readonly string[];
  /** Called with each new token as it is picked (streaming). */
  onToken?: (token: string) => void;
  /** Stops between steps when aborted (the request's deadline or the client hanging up), rejecting with its reason. */
  signal?: AbortSignal;
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
    const step = card.graphs.step;
    const want = [step.token, ...step.state];
    const missing = want.filter((n) => !session.inputNames.includes(n));
    const outs = [step.logProbs, ...step.state.map((n) => `next_${n}`)].filter((n) => !session.outputNames.includes(n));
    if (missing.length > 0 || outs.length > 0)
      throw new Error(
        `model card '${card.name}': ${step.file} lacks ${[...missing.map((n) => `input '${n}'`), ...outs.map((n) => `output '${n}'`)].join(', ')}`,
      );
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

  /** One step for one row: the log-probabilities after `token` and the next state. */
  private async step(token: number, state: State): Promise<{ logProbs: Float32Array; state: State }> {
    const g = this.card.graphs.step;
    const out = await this.session.run({
      [g.token]: new this.ort.Tensor('int64', BigInt64Array.of(BigInt(token)), [1]),
      ...state,
    });
    return {
      logProbs: out[g.logProbs].data as Float32Array,
      state: Object.fromEntries(g.state.map((n) => [n, out[`next_${n}`]])),
    };
  }

  /** log P(text) under the model, token by token, `</s>` included. */
  async score(text: string, signal?: AbortSignal): Promise<LmScore> {
    const tokens = this.tokenize(text);
    const ids = Array.from(this.vocab.encode(tokens));
    ids.push(SPECIALS.eos.id);
    let state = this.zeroState(1);
    let prev: number = SPECIALS.eos.id;
    const tokenLogProbs: number[] = [];
    for (const id of ids) {
      signal?.throwIfAborted();
      const out = await this.step(prev, state);
      tokenLogProbs.push(out.logProbs[id]);
      state = out.state;
      prev = id;
    }
    const logProb = tokenLogProbs.reduce((a, b) => a + b, 0);
    return { tokens, tokenLogProbs, logProb, perplexity: Math.exp(-logProb / ids.length) };
  }

  /** Continues `text` (greedy, or sampled with a seed: the same seed gives the same completion). */
  async complete(text: string, opts: CompleteOptions): Promise<Completion> {
    const sampler = new TokenSampler(opts);
    const prompt = Array.from(this.vocab.encode(this.tokenize(text)));
    const stops = new Set((opts.stop ?? []).map((s) => this.vocab.id(s)).filter((id) => id !== SPECIALS.unk.id));
    // Never emitted: padding, <s> (not in a stream) and <unk> (not a word to show).
    const banned = new Set<number>([SPECIALS.pad.id, SPECIALS.bos.id, SPECIALS.unk.id]);
    let state = this.zeroState(1);
    let logProbs: Float32Array = new Float32Array(0);
    for (const id of [SPECIALS.eos.id, ...prompt]) {
      opts.signal?.throwIfAborted();
      const out = await this.step(id, state);
      state = out.state;
      logProbs = out.logProbs;
    }
    const generated: number[] = [];
    let logProb = 0;
    let finishReason: Completion['finishReason'] = 'length';
    const V = this.vocab.size;
    while (generated.length < opts.maxNewTokens) {
      const next = sampler.pick(logProbs, 0, V, banned);
      logProb += logProbs[next];
      if (next === SPECIALS.eos.id) {
        finishReason = 'eos';
        break;
      }
      generated.push(next);
      opts.onToken?.(this.vocab.token(next));
      if (stops.has(next)) {
        finishReason = 'stop';
        break;
      }
      if (generated.length >= opts.maxNewTokens) break;
      opts.signal?.throwIfAborted();
      const out = await this.step(next, state);
      state = out.state;
      logProbs = out.logProbs;
    }
    const tokens = this.vocab.decode(generated, { stripSpecials: true });
    return { text: this.tokenizer.detokenize(tokens, this.lang), tokens, logProb, finishReason };
  }
}
