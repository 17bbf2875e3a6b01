/**
 * Runs an exported frost translation model (encoder graph + decoder-step graph + model card) with
 * ONNX Runtime. Isomorphic: the ORT module is a parameter, so the same code serves onnxruntime-node
 * (server, CLI) and onnxruntime-web (browser); nothing here imports tfjs or Node APIs.
 */
import type { InferenceSession, Tensor } from 'onnxruntime-common';
import { generate } from '../decode/generate.ts';
import { searchWithHooks } from './search-hooks.ts';
import type { Hypothesis, SearchOptions, StepModel } from '../decode/types.ts';
import type { Tokenizer } from '../text/tokenize.ts';
import { cardTokenizer } from './card-tokenizer.ts';
import { SPECIALS, Vocabulary } from '../vocab.ts';
import type { ModelCard } from './model-card.ts';

/** The ORT module (`import * as ort from 'onnxruntime-node'` or `'onnxruntime-web'`), typed by their shared API. */
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
  /**
   * Reads other files the card names (its subword `.model` files). @default `graphs` when that is a loader
   */
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

/** A tensor on the CPU: what reorder gathers rows of. */
export type HostTensor = Tensor & { data: Exclude<Tensor['data'], string[]> };

/**
 * Per-row memory (encoder outputs, masks), gathered lazily. Beam search reorders rows every step,
 * but within one input all beams share the same memory row, so we track which encoder row each
 * live row reads (`rows`) and only materialise a gathered copy when that mapping changes: after
 * the beam expansion and whenever finished inputs are dropped, not on every step.
 */
export class MemoryStore {
  private cachedRows: Int32Array | null = null;
  private cached: Record<string, HostTensor> | null = null;

  constructor(
    private readonly ort: Ort,
    readonly base: Readonly<Record<string, HostTensor>>,
  ) {}

  /** The memory tensors whose row i is encoder row `rows[i]`. */
  materialise(rows: Int32Array): Record<string, HostTensor> {
    if (this.cached && this.cachedRows && sameRows(this.cachedRows, rows)) return this.cached;
    const identity = rows.length === firstDim(this.base) && isIdentity(rows);
    const out: Record<string, HostTensor> = {};
    for (const [name, t] of Object.entries(this.base)) out[name] = identity ? t : gatherRows(this.ort, t, rows);
    this.cachedRows = rows;
    this.cached = out;
    return out;
  }
}

/** What {@link Seq2SeqRuntime.stepModel} steps: the decoder's recurrent tensors and a view of its memory. */
export interface DecoderState {
  /** Live rows. */
  readonly rows: number;
  /** Recurrent inputs by decoder input name (the card's `graphs.decoder.state`). */
  readonly state: Readonly<Record<string, HostTensor>>;
  /** For each live row, the encoder row whose memory it reads. */
  readonly memoryRows: Int32Array;
  readonly memory: MemoryStore;
}

/** A serialising lock: one `session.run` at a time per runtime. */
class RunQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    // The queue must keep going after a failed run; the caller still sees the rejection.
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/**
 * An exported translation model ready to run. Create it with {@link Seq2SeqRuntime.create}; use
 * {@link translate} for text, or {@link encode} + {@link stepModel} + core/decode's `generate` for ids.
 *
 * Concurrency: calls may overlap (a server handles several requests); the session runs of all of
 * them are serialised, because onnxruntime-web's sessions refuse concurrent runs, and this keeps the
 * reused per-step buffers safe. Requests interleave step by step.
 */
export class Seq2SeqRuntime {
  readonly card: ModelCard;
  readonly vocabSize: number;
  /** The decoder as core/decode's step model. */
  readonly stepModel: StepModel<DecoderState> & { readonly pad: number; readonly unk: number };

  /** The ORT module the sessions run on (feeds for {@link encodeFeeds} are made with its Tensor). */
  readonly ort: Ort;
  private readonly encoder: InferenceSession;
  private readonly decoder: InferenceSession;
  private readonly tokenizer: Tokenizer;
  private readonly srcLang: string;
  private readonly tgtLang: string;
  private readonly srcVocab: Vocabulary;
  private readonly tgtVocab: Vocabulary;
  private readonly queue = new RunQueue();
  /** Token feed buffers by row count: row counts repeat from step to step, so this avoids an allocation per step. */
  private readonly tokenBuffers = new Map<number, BigInt64Array>();

  private constructor(
    ort: Ort,
    card: ModelCard,
    vocabs: { tokenizer: Tokenizer; source: Vocabulary; target: Vocabulary },
    encoder: InferenceSession,
    decoder: InferenceSession,
  ) {
    this.ort = ort;
    this.card = card;
    this.encoder = encoder;
    this.decoder = decoder;
    this.tokenizer = vocabs.tokenizer;
    this.srcVocab = vocabs.source;
    this.tgtVocab = vocabs.target;
    this.srcLang = (card.source ?? card.target).lang;
    this.tgtLang = card.target.lang;
    this.vocabSize = vocabs.target.size;
    this.stepModel = {
      vocabSize: this.vocabSize,
      bos: card.specials.bos,
      eos: card.specials.eos,
      pad: card.specials.pad,
      // Search never emits <unk> unless a caller passes allowUnk (core/decode/types.ts).
      unk: card.specials.unk,
      step: (prev, state) => this.step(prev, state),
      reorder: (state, order) => this.reorder(state, order),
    };
  }

  /**
   * Creates both sessions and checks their inputs and outputs against the card.
   * @throws Error naming the graph file (via `locate`) when a graph cannot be loaded or does not
   *   match the card's `graphs` section
   */
  static async create(init: Seq2SeqRuntimeInit): Promise<Seq2SeqRuntime> {
    const { ort, card } = init;
    const locate = init.locate ?? ((file: string) => file);
    // Card problems are cheaper to report before any session is created.
    const vocabs = readVocabularies(card);
    const files = init.files ?? (typeof init.graphs === 'function' ? init.graphs : undefined);
    const tokenizer = await cardTokenizer(card, files, locate);
    const createSession: SessionFactory =
      init.createSession ?? ((bytes) => ort.InferenceSession.create(bytes, init.sessionOptions ?? {}));
    const open = async (role: GraphRole): Promise<InferenceSession> => {
      const file = card.graphs[role].file;
      let bytes: Uint8Array;
      if (typeof init.graphs === 'function') {
        try {
          bytes = await init.graphs(file);
        } catch (err) {
          throw new Error(`${locate(file)}: cannot read the ${role} graph (${(err as Error).message})`, { cause: err });
        }
      } else {
        bytes = init.graphs[role];
      }
      try {
        return await createSession(bytes, role);
      } catch (err) {
        throw new Error(`${locate(file)}: not a loadable ONNX ${role} graph (${(err as Error).message})`, {
          cause: err,
        });
      }
    };
    const encoder = await open('encoder');
    let decoder: InferenceSession;
    try {
      decoder = await open('decoder');
      checkGraphs(card, encoder, decoder, locate);
    } catch (err) {
      await encoder.release().catch(() => undefined);
      throw err;
    }
    return new Seq2SeqRuntime(ort, card, { ...vocabs, tokenizer }, encoder, decoder);
  }

  /** Source-side ids of one text (no specials); unknown words map to <unk>. */
  toSourceIds(text: string): Int32Array {
    return this.srcVocab.encode(this.tokenizer.tokenize(text, this.srcLang));
  }

  /**
   * Runs the encoder on a batch of source id sequences (no specials), padded with <pad> to the
   * longest. As in training's evaluation, an empty sequence is fed as one <pad> of length 1.
   * @returns the decoder's initial state, one row per input in input order
   */
  async encode(sources: readonly ArrayLike<number>[]): Promise<DecoderState> {
    const B = sources.length;
    if (B === 0) throw new RangeError('encode: sources must hold at least one sequence');
    const S = Math.max(1, ...sources.map((s) => s.length));
    const ids = new BigInt64Array(B * S).fill(BigInt(this.card.specials.pad));
    const lengths = new BigInt64Array(B);
    sources.forEach((s, b) => {
      for (let j = 0; j < s.length; j++) ids[b * S + j] = BigInt(s[j]);
      lengths[b] = BigInt(Math.max(1, s.length));
    });
    return this.encodeFeeds(
      { src_ids: new this.ort.Tensor('int64', ids, [B, S]), src_lengths: new this.ort.Tensor('int64', lengths, [B]) },
      B,
    );
  }

  /**
   * Runs the encoder on feeds by input name (a graph that reads only some of them gets those) and
   * returns the decoder's initial state for its `rows` rows. {@link encode} feeds token ids; a
   * caption model's runtime (caption.ts) feeds `pixels`.
   * @throws Error when the encoder needs an input that `feeds` lacks, or returns the wrong rows
   */
  async encodeFeeds(available: Readonly<Record<string, Tensor>>, rows: number): Promise<DecoderState> {
    const B = rows;
    const feeds: Record<string, Tensor> = {};
    for (const name of this.encoder.inputNames) {
      const t = available[name];
      if (t === undefined) throw new Error(`model '${this.card.name}': encoder input '${name}' was not fed (given: ${Object.keys(available).join(', ')})`);
      feeds[name] = t;
    }
    const out = await this.queue.run(() => this.encoder.run(feeds));
    const { graphs } = this.card;
    const state: Record<string, HostTensor> = {};
    const memory: Record<string, HostTensor> = {};
    for (const name of graphs.decoder.state) state[name] = hostTensor(out[name], `encoder output '${name}'`, B);
    for (const name of graphs.decoder.memory) memory[name] = hostTensor(out[name], `encoder output '${name}'`, B);
    return { rows: B, state, memoryRows: iota(B), memory: new MemoryStore(this.ort, memory) };
  }

  /** Runs one decoder step for every row (the {@link StepModel.step} of {@link stepModel}). */
  private async step(prev: Int32Array, s: DecoderState): Promise<{ logProbs: Float32Array; state: DecoderState }> {
    const rows = prev.length;
    if (rows !== s.rows) throw new RangeError(`step: prev has ${rows} tokens but the state has ${s.rows} rows`);
    const dec = this.card.graphs.decoder;
    const out = await this.queue.run(() => {
      // Filled inside the queue: the buffer is shared by every call with this row count.
      let tokens = this.tokenBuffers.get(rows);
      if (!tokens) this.tokenBuffers.set(rows, (tokens = new BigInt64Array(rows)));
      for (let i = 0; i < rows; i++) tokens[i] = BigInt(prev[i]);
      const feeds: Record<string, Tensor> = { ...s.state, ...s.memory.materialise(s.memoryRows) };
      feeds[dec.token] = new this.ort.Tensor('int64', tokens, [rows]);
      return this.decoder.run(feeds);
    });
    const lp = out[dec.logProbs];
    if (!lp || lp.type !== 'float32' || lp.dims.length !== 2 || lp.dims[0] !== rows || lp.dims[1] !== this.vocabSize) {
      throw new Error(
        `decoder output '${dec.logProbs}' has type ${lp?.type} and dims [${lp?.dims.join(',')}], ` +
          `expected float32 [${rows},${this.vocabSize}] (the card's target vocabulary size)`,
      );
    }
    const state: Record<string, HostTensor> = {};
    for (const name of dec.state) state[name] = hostTensor(out[`next_${name}`], `decoder output 'next_${name}'`, rows);
    return {
      logProbs: lp.data as Float32Array,
      state: { rows, state, memoryRows: s.memoryRows, memory: s.memory },
    };
  }

  /** New row i = old row order[i], for every state tensor and (lazily) every memory tensor. */
  private reorder(s: DecoderState, order: Int32Array): DecoderState {
    for (let i = 0; i < order.length; i++) {
      if (order[i] < 0 || order[i] >= s.rows) throw new RangeError(`reorder: order[${i}] = ${order[i]} is not a row < ${s.rows}`);
    }
    if (order.length === s.rows && isIdentity(order)) return s;
    const state: Record<string, HostTensor> = {};
    for (const [name, t] of Object.entries(s.state)) state[name] = gatherRows(this.ort, t, order);
    const memoryRows = new Int32Array(order.length);
    for (let i = 0; i < order.length; i++) memoryRows[i] = s.memoryRows[order[i]];
    return { rows: order.length, state, memoryRows, memory: s.memory };
  }

  /**
   * Translates a batch of texts: tokenise (unknown words → <unk>) → encode (padded to the batch's
   * longest) → search → detokenise. Inputs are decoded together, in one batch.
   * @returns one translation per text, in order; `nBest` is set when `opts.nBest` > 1
   */
  async translate(texts: readonly string[], opts: SearchOptions = {}): Promise<Translation[]> {
    this.assertTextInput('translate');
    if (!Array.isArray(texts)) throw new TypeError('translate: texts must be an array of strings');
    texts.forEach((t, i) => {
      if (typeof t !== 'string') throw new TypeError(`translate: texts[${i}] must be a string, got ${typeof t}`);
    });
    if (texts.length === 0) return [];
    const sources = texts.map((t) => this.toSourceIds(t));
    const initial = await this.encode(sources);
    const hyps = await generate(this.stepModel, initial, sources.length, {
      ...opts,
      sourceLengths: sources.map((s) => s.length),
    });
    const wantList = (opts.nBest ?? 1) > 1;
    return hyps.map((list, i) => {
      const all = list.map((h) => this.toHypothesis(h));
      if (all.length === 0) throw new Error(`search returned no hypothesis for input ${i}`);
      return wantList ? { ...all[0], nBest: all } : all[0];
    });
  }

  /**
   * {@link translate} with per-input callbacks: each input is reported when it is done, and the
   * inputs in `hooks.prefixInputs` after every step. Same batch, same search, same results as
   * {@link translate}; a server uses it to decode many requests as one batch and answer (or
   * stream to) each request on its own schedule.
   */
  async translateEach(texts: readonly string[], opts: SearchOptions = {}, hooks: TranslateHooks = {}): Promise<Translation[]> {
    this.assertTextInput('translateEach');
    if (!Array.isArray(texts)) throw new TypeError('translateEach: texts must be an array of strings');
    texts.forEach((t, i) => {
      if (typeof t !== 'string') throw new TypeError(`translateEach: texts[${i}] must be a string, got ${typeof t}`);
    });
    if (texts.length === 0) return [];
    const sources = texts.map((t) => this.toSourceIds(t));
    const initial = await this.encode(sources);
    const wantList = (opts.nBest ?? 1) > 1;
    const toTranslation = (list: Hypothesis[], i: number): Translation => {
      const all = list.map((h) => this.toHypothesis(h));
      if (all.length === 0) throw new Error(`search returned no hypothesis for input ${i}`);
      return wantList ? { ...all[0], nBest: all } : all[0];
    };
    const { prefixInputs, onPrefix, onDone } = hooks;
    const hyps = await searchWithHooks(
      this.stepModel,
      initial,
      sources.length,
      { ...opts, sourceLengths: sources.map((s) => s.length) },
      {
        onPrefix:
          onPrefix && prefixInputs?.size
            ? (b, tokens) => {
                if (prefixInputs.has(b)) onPrefix(b, this.toHypothesis({ tokens: tokens as number[], logProb: 0, score: 0 }).text);
              }
            : undefined,
        onDone: onDone && ((b, list) => onDone(b, toTranslation(list, b))),
      },
    );
    return hyps.map(toTranslation);
  }

  /** Text models only: a caption model's encoder reads pixels (run it with CaptionRuntime). */
  private assertTextInput(method: string): void {
    if (this.card.task !== 'translation') {
      throw new TypeError(`${method}: model '${this.card.name}' is a ${this.card.task} model; its encoder reads images (use CaptionRuntime)`);
    }
  }

  /** Target tokens and detokenised text of a hypothesis; <unk> is kept: it stands for a word the model could not name. */
  toHypothesis(h: Hypothesis): TranslationHypothesis {
    const tokens = this.tgtVocab.decode(h.tokens, { stripSpecials: true });
    return { text: this.tokenizer.detokenize(tokens, this.tgtLang), tokens, score: h.score, logProb: h.logProb };
  }

  /** Releases both sessions; the runtime is unusable afterwards. */
  async release(): Promise<void> {
    await this.queue.run(async () => {
      await Promise.all([this.encoder.release(), this.decoder.release()]);
    });
  }
}

/**
 * The vocabularies a card names (the tokeniser comes from card-tokenizer.ts). A card without a source
 * vocabulary shares the target one (joint vocabulary).
 * @throws Error naming the card section at fault
 */
function readVocabularies(card: ModelCard): { source: Vocabulary; target: Vocabulary } {
  const vocab = (section: 'source' | 'target', tokens: readonly string[]): Vocabulary => {
    try {
      return Vocabulary.fromJSON(tokens);
    } catch (err) {
      throw new Error(`model card '${card.name}': ${section}.tokens: ${(err as Error).message}`, { cause: err });
    }
  };
  const target = vocab('target', card.target.tokens);
  const source = card.source ? vocab('source', card.source.tokens) : target;
  const { specials } = card;
  // Vocabulary fixes the special ids; a card that says otherwise was written by something else.
  for (const key of ['pad', 'unk', 'bos', 'eos'] as const) {
    const found = target.tokens[specials[key]];
    if (found !== SPECIALS[key].token) {
      throw new Error(
        `model card '${card.name}': specials.${key} is ${specials[key]}, but that id is ${found === undefined ? 'outside the target vocabulary' : `'${found}'`}`,
      );
    }
  }
  return { source, target };
}

/** The encoder inputs a runtime feeds, by task: token ids and lengths, or normalised pixels [B, 3, size, size]. */
const ENCODER_INPUTS: Readonly<Record<ModelCard['task'], readonly string[]>> = {
  translation: ['src_ids', 'src_lengths'],
  caption: ['pixels'],
};

/**
 * Checks the sessions against the card's `graphs` section, so a mismatched export fails at load
 * time with the file name rather than mid-request with an ORT feed error.
 */
function checkGraphs(card: ModelCard, encoder: InferenceSession, decoder: InferenceSession, locate: (file: string) => string): void {
  const { graphs } = card;
  const encWhere = locate(graphs.encoder.file);
  const decWhere = locate(graphs.decoder.file);
  const feedable = ENCODER_INPUTS[card.task];
  for (const name of encoder.inputNames) {
    if (!feedable.includes(name)) {
      throw new Error(`${encWhere}: encoder input '${name}' is not one the runtime can feed to a ${card.task} model (${feedable.join(', ')})`);
    }
  }
  for (const name of [...graphs.decoder.state, ...graphs.decoder.memory]) {
    if (!encoder.outputNames.includes(name)) {
      throw new Error(`${encWhere}: encoder has no output '${name}' (outputs: ${encoder.outputNames.join(', ')})`);
    }
  }
  const wanted = [graphs.decoder.token, ...graphs.decoder.state, ...graphs.decoder.memory];
  for (const name of wanted) {
    if (!decoder.inputNames.includes(name)) {
      throw new Error(`${decWhere}: decoder has no input '${name}' (inputs: ${decoder.inputNames.join(', ')})`);
    }
  }
  for (const name of decoder.inputNames) {
    if (!wanted.includes(name)) throw new Error(`${decWhere}: decoder input '${name}' is not named in the model card`);
  }
  for (const name of [graphs.decoder.logProbs, ...graphs.decoder.state.map((s) => `next_${s}`)]) {
    if (!decoder.outputNames.includes(name)) {
      throw new Error(`${decWhere}: decoder has no output '${name}' (outputs: ${decoder.outputNames.join(', ')})`);
    }
  }
}

/** Checks that an output is a CPU tensor with `rows` rows (reorder reads its data). */
function hostTensor(t: Tensor | undefined, what: string, rows: number): HostTensor {
  if (!t) throw new Error(`${what} is missing from the run's outputs`);
  if (t.location !== 'cpu' && t.location !== 'cpu-pinned') {
    throw new Error(`${what} is on '${t.location}', but the runtime needs CPU tensors (leave preferredOutputLocation unset)`);
  }
  if (t.type === 'string') throw new Error(`${what} is a string tensor; expected numbers`);
  if (t.dims[0] !== rows) throw new Error(`${what} has ${t.dims[0]} rows (dims [${t.dims.join(',')}]), expected ${rows}`);
  return t as HostTensor;
}

/** Rows of `t` along axis 0: new row i = old row order[i]. */
function gatherRows(ort: Ort, t: HostTensor, order: Int32Array): HostTensor {
  const rowSize = t.dims.length === 0 ? 1 : t.size / t.dims[0];
  const src = t.data;
  const Ctor = src.constructor as new (n: number) => typeof src;
  const out = new Ctor(order.length * rowSize);
  for (let i = 0; i < order.length; i++) {
    const from = order[i] * rowSize;
    // subarray + set is a memcpy for every typed array type, much faster than an element loop.
    (out as Float32Array).set((src as Float32Array).subarray(from, from + rowSize), i * rowSize);
  }
  return new ort.Tensor(t.type as 'float32', out as Float32Array, [order.length, ...t.dims.slice(1)]) as HostTensor;
}

function firstDim(named: Readonly<Record<string, HostTensor>>): number {
  for (const t of Object.values(named)) return t.dims[0];
  return 0;
}

function iota(n: number): Int32Array {
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  return a;
}

function isIdentity(order: Int32Array): boolean {
  for (let i = 0; i < order.length; i++) if (order[i] !== i) return false;
  return true;
}

function sameRows(a: Int32Array, b: Int32Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
