/**
 * Runs an exported frost translation model (encoder graph + decoder-step graph + model card) with
 * ONNX Runtime. Isomorphic: the ORT module is a parameter, so the same code serves onnxruntime-node
 * (server, CLI) and onnxruntime-web (browser); nothing here imports tfjs or Node APIs.
 */
import type { InferenceSession, Tensor } from 'onnxruntime-common';
import { searchWithHooks } from '../decode/search-hooks.ts';
import type { Hypothesis, SearchOptions, StepModel, TopCandidates } from '../decode/types.ts';
import type { Tokenizer } from '../text/tokenize.ts';
import type { Vocabulary } from '../vocab.ts';
import { appendPosition, stateOutput } from './append-cache.ts';
import { BufferPool } from './buffer-pool.ts';
import { checkGraphs, checkSourceVocabulary, readVocabularies } from './card-checks.ts';
import { cardTokenizer } from './card-tokenizer.ts';
import type { ModelCard } from './model-card.ts';
import {
  gatherRows,
  hostTensor,
  iota,
  isIdentity,
  MemoryStore,
  planRowMoves,
  reorderRowsInPlace,
  type DecoderState,
  type HostTensor,
} from './row-state.ts';
import { RunQueue } from './run-queue.ts';
import type {
  GraphRole,
  Ort,
  SessionFactory,
  Seq2SeqRuntimeInit,
  TranslateHooks,
  Translation,
  TranslationHypothesis,
} from './seq2seq-types.ts';

export type * from './seq2seq-types.ts';

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
  /**
   * State tensors a step returned that no reorder has used yet: search reorders a step's state once
   * and drops it, so reorder may rewrite these in place (core/runtime/row-state.ts).
   */
  private readonly freshState = new WeakSet<HostTensor>();
  /** What a dense step fetches: the log-probs and the state, not the top-k outputs when the graph has them. */
  private readonly denseFetches: string[] | undefined;
  /** What a top-k step fetches: the candidates and the state. */
  private readonly topFetches: string[] | undefined;
  /** Token feed buffers by row count: row counts repeat from step to step, so this avoids an allocation per step. */
  private readonly tokenBuffers = new Map<number, BigInt64Array>();
  /** Buffers of grown append caches and expanded states, for the next of the same size (buffer-pool.ts). */
  private readonly buffers = new BufferPool();

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
    const dec = card.graphs.decoder;
    const stateOut = dec.state.map((n) => stateOutput(dec, n));
    this.denseFetches = dec.top ? [dec.logProbs, ...stateOut] : undefined;
    this.topFetches = dec.top ? [dec.top.logProbs, dec.top.tokens, ...stateOut] : undefined;
    this.stepModel = {
      vocabSize: this.vocabSize,
      bos: card.specials.bos,
      eos: card.specials.eos,
      pad: card.specials.pad,
      // Search never emits <unk> unless a caller passes allowUnk (core/decode/types.ts).
      unk: card.specials.unk,
      step: (prev, state) => this.step(prev, state),
      reorder: (state, order) => this.reorder(state, order),
      // Graphs exported with top-k outputs let search skip copying and scanning whole rows.
      ...(card.graphs.decoder.top && {
        topK: card.graphs.decoder.top.k,
        stepTop: (prev: Int32Array, state: DecoderState) => this.stepTop(prev, state),
      }),
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
      let session: InferenceSession;
      try {
        session = await createSession(bytes, role);
      } catch (err) {
        throw new Error(`${locate(file)}: not a loadable ONNX ${role} graph (${(err as Error).message})`, {
          cause: err,
        });
      }
      if (role === 'encoder') {
        try {
          checkSourceVocabulary(card, bytes, locate(file));
        } catch (err) {
          await session.release().catch(() => undefined);
          throw err;
        }
      }
      return session;
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
      if (t === undefined)
        throw new Error(
          `model '${this.card.name}': encoder input '${name}' was not fed (given: ${Object.keys(available).join(', ')})`,
        );
      feeds[name] = t;
    }
    const out = await this.queue.run(() => this.encoder.run(feeds));
    const { graphs } = this.card;
    const state: Record<string, HostTensor> = {};
    const memory: Record<string, HostTensor> = {};
    for (const name of graphs.decoder.state) {
      state[name] = hostTensor(out[name], `encoder output '${name}'`, B);
      // An append cache is written in place by the steps: this one is read by nothing else.
      if (graphs.decoder.cache?.states[name] !== undefined) this.freshState.add(state[name]);
    }
    for (const name of graphs.decoder.memory) memory[name] = hostTensor(out[name], `encoder output '${name}'`, B);
    const cacheLength = graphs.decoder.cache ? { cacheLength: 0 } : {};
    return {
      rows: B,
      state,
      memoryRows: iota(B),
      memory: new MemoryStore(this.ort, memory, graphs.decoder.groupedMemory === true),
      ...cacheLength,
    };
  }

  /** Runs the decoder step for every row, fetching `fetches` (all outputs when undefined). */
  private runDecoder(prev: Int32Array, s: DecoderState, fetches?: string[]): Promise<InferenceSession.ReturnType> {
    const rows = prev.length;
    if (rows !== s.rows) throw new RangeError(`step: prev has ${rows} tokens but the state has ${s.rows} rows`);
    const dec = this.card.graphs.decoder;
    return this.queue.run(() => {
      // Filled inside the queue: the buffer is shared by every call with this row count.
      let tokens = this.tokenBuffers.get(rows);
      if (!tokens) this.tokenBuffers.set(rows, (tokens = new BigInt64Array(rows)));
      for (let i = 0; i < rows; i++) tokens[i] = BigInt(prev[i]);
      const feeds: Record<string, Tensor> = { ...s.state, ...s.memory.materialise(s.memoryRows) };
      feeds[dec.token] = new this.ort.Tensor('int64', tokens, [rows]);
      if (dec.cache) feeds[dec.cache.length] = new this.ort.Tensor('int64', [BigInt(s.cacheLength ?? 0)], []);
      return fetches ? this.decoder.run(feeds, fetches) : this.decoder.run(feeds);
    });
  }

  /**
   * The state outputs of a step, as the next step's state. An append cache gets the step's new position written into
   * its buffer, in place when nothing else reads that buffer, so `s` must not be used afterwards.
   */
  private nextState(out: InferenceSession.ReturnType, s: DecoderState, rows: number): DecoderState {
    const dec = this.card.graphs.decoder;
    const state: Record<string, HostTensor> = {};
    const length = s.cacheLength ?? 0;
    for (const name of dec.state) {
      const output = stateOutput(dec, name);
      const t = hostTensor(out[output], `decoder output '${output}'`, rows);
      state[name] = dec.cache?.states[name]
        ? appendPosition(
            this.ort,
            s.state[name]!,
            length,
            t,
            dec.cache.axis,
            this.freshState.delete(s.state[name]!),
            this.buffers,
          )
        : t;
      this.freshState.add(state[name]);
    }
    const cacheLength = dec.cache ? { cacheLength: length + 1 } : {};
    return { rows, state, memoryRows: s.memoryRows, memory: s.memory, ...cacheLength };
  }

  /**
   * One decoder step that fetches each row's top-k candidates and the state, not the whole
   * [rows, V] log-probabilities (the {@link StepModel.stepTop} of {@link stepModel}): at batch 64
   * that is 2 MB less to copy out of onnxruntime and scan in JS per step.
   */
  private async stepTop(prev: Int32Array, s: DecoderState): Promise<{ top: TopCandidates; state: DecoderState }> {
    const dec = this.card.graphs.decoder;
    const top = dec.top!;
    const rows = prev.length;
    const out = await this.runDecoder(prev, s, this.topFetches);
    const [v, t] = [out[top.logProbs], out[top.tokens]];
    const shapeOk = (x: Tensor | undefined, type: string) =>
      x?.type === type && x.dims.length === 2 && x.dims[0] === rows && x.dims[1] === top.k;
    if (!shapeOk(v, 'float32') || !shapeOk(t, 'int32')) {
      throw new Error(
        `decoder outputs '${top.logProbs}' / '${top.tokens}' have types ${v?.type} / ${t?.type} and dims [${v?.dims.join(',')}] / ` +
          `[${t?.dims.join(',')}], expected float32 / int32 [${rows},${top.k}] (the card's graphs.decoder.top)`,
      );
    }
    return {
      top: { k: top.k, logProbs: v!.data as Float32Array, tokens: t!.data as Int32Array },
      state: this.nextState(out, s, rows),
    };
  }

  /** Runs one decoder step for every row (the {@link StepModel.step} of {@link stepModel}). */
  private async step(prev: Int32Array, s: DecoderState): Promise<{ logProbs: Float32Array; state: DecoderState }> {
    const rows = prev.length;
    const dec = this.card.graphs.decoder;
    const out = await this.runDecoder(prev, s, this.denseFetches);
    const lp = out[dec.logProbs];
    if (!lp || lp.type !== 'float32' || lp.dims.length !== 2 || lp.dims[0] !== rows || lp.dims[1] !== this.vocabSize) {
      throw new Error(
        `decoder output '${dec.logProbs}' has type ${lp?.type} and dims [${lp?.dims.join(',')}], ` +
          `expected float32 [${rows},${this.vocabSize}] (the card's target vocabulary size)`,
      );
    }
    return { logProbs: lp.data as Float32Array, state: this.nextState(out, s, rows) };
  }

  /**
   * New row i = old row order[i], for every state tensor and (lazily) every memory tensor. A state a
   * step returned is rewritten in place when the order does not grow it, so `s` must not be used
   * afterwards (search never does: it continues from the returned state).
   */
  private reorder(s: DecoderState, order: Int32Array): DecoderState {
    for (let i = 0; i < order.length; i++) {
      if (order[i] < 0 || order[i] >= s.rows)
        throw new RangeError(`reorder: order[${i}] = ${order[i]} is not a row < ${s.rows}`);
    }
    if (order.length === s.rows && isIdentity(order)) return s;
    const state: Record<string, HostTensor> = {};
    const appended = this.card.graphs.decoder.cache?.states ?? {};
    const moves = order.length <= s.rows ? planRowMoves(order) : undefined;
    for (const [name, t] of Object.entries(s.state)) {
      // In place only once per step output, and never to grow (the beam expansion).
      const fresh = this.freshState.delete(t);
      if (moves && fresh) {
        const filled =
          appended[name] !== undefined && s.cacheLength !== undefined
            ? { axis: this.card.graphs.decoder.cache!.axis, length: s.cacheLength }
            : undefined;
        state[name] = reorderRowsInPlace(this.ort, t, order, filled, moves);
      } else {
        state[name] = gatherRows(this.ort, t, order, this.buffers);
        // A step's output that this reorder copied is read by nothing else: its buffer can serve a later copy.
        if (fresh && t.data instanceof Float32Array) this.buffers.give(t.data);
      }
      // The next step writes its new position into an append cache's buffer, which only this state holds.
      if (appended[name] !== undefined) this.freshState.add(state[name]);
    }
    const memoryRows = new Int32Array(order.length);
    for (let i = 0; i < order.length; i++) memoryRows[i] = s.memoryRows[order[i]];
    const cacheLength = s.cacheLength === undefined ? {} : { cacheLength: s.cacheLength };
    return { rows: order.length, state, memoryRows, memory: s.memory, ...cacheLength };
  }

  /**
   * Translates a batch of texts: tokenise (unknown words → <unk>) → encode (padded to the batch's
   * longest) → search → detokenise. Inputs are decoded together, in one batch.
   * @returns one translation per text, in order; `nBest` is set when `opts.nBest` > 1
   */
  async translate(texts: readonly string[], opts: SearchOptions = {}): Promise<Translation[]> {
    return this.decodeTexts('translate', texts, opts, {});
  }

  /**
   * {@link translate} with per-input callbacks: each input is reported when it is done, and the
   * inputs in `hooks.prefixInputs` after every step. Same batch, same search, same results as
   * {@link translate}; a server uses it to decode many requests as one batch and answer (or
   * stream to) each request on its own schedule.
   */
  translateEach(
    texts: readonly string[],
    opts: SearchOptions = {},
    hooks: TranslateHooks = {},
  ): Promise<Translation[]> {
    return this.decodeTexts('translateEach', texts, opts, hooks);
  }

  /** What translate and translateEach do; `method` names the caller in argument errors. */
  private async decodeTexts(
    method: string,
    texts: readonly string[],
    opts: SearchOptions,
    hooks: TranslateHooks,
  ): Promise<Translation[]> {
    this.assertTextInput(method);
    if (!Array.isArray(texts)) throw new TypeError(`${method}: texts must be an array of strings`);
    texts.forEach((t, i) => {
      if (typeof t !== 'string') throw new TypeError(`${method}: texts[${i}] must be a string, got ${typeof t}`);
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
                if (prefixInputs.has(b))
                  onPrefix(b, this.toHypothesis({ tokens: tokens as number[], logProb: 0, score: 0 }).text);
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
      throw new TypeError(
        `${method}: model '${this.card.name}' is a ${this.card.task} model; its encoder reads images (use CaptionRuntime)`,
      );
    }
  }

  /**
   * Target tokens and detokenised text of a hypothesis; <unk> is kept: it stands for a word the model could not name.
   */
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
