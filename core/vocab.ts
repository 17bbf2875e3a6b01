/**
 * Token <-> id mapping shared by training, export and every runtime. The specials sit at fixed ids so a
 * model card's `specials` block, the decoder's bos/eos and padding masks never need a lookup.
 *
 * Isomorphic: no Node APIs.
 */

/** Special tokens and their fixed ids. */
export const SPECIALS = Object.freeze({
  pad: { token: '<pad>', id: 0 },
  unk: { token: '<unk>', id: 1 },
  bos: { token: '<s>', id: 2 },
  eos: { token: '</s>', id: 3 },
} as const);

const SPECIAL_TOKENS: readonly string[] = [
  SPECIALS.pad.token,
  SPECIALS.unk.token,
  SPECIALS.bos.token,
  SPECIALS.eos.token,
];

export interface BuildOptions {
  /** Keep a token only if it occurs at least this often in the training sentences. @default 1 */
  minFreq?: number;
  /** Cap on the vocabulary size, specials included (the embedding/output matrix rows). */
  maxSize?: number;
}

export interface EncodeOptions {
  /** Prepend `<s>`. @default false */
  bos?: boolean;
  /** Append `</s>`. @default false */
  eos?: boolean;
}

export interface DecodeOptions {
  /**
   * Drop `<pad>`, `<s>` and `</s>`. `<unk>` is kept: it stands for a real word the model could not name.
   * @default false
   */
  stripSpecials?: boolean;
}

/**
 * A closed word vocabulary with `<pad>`=0, `<unk>`=1, `<s>`=2, `</s>`=3, then the words by id.
 *
 * @example
 * const vocab = Vocabulary.build(sentences, { minFreq: 2 });
 * const ids = vocab.encode(['a', 'dog'], { eos: true });
 * vocab.decode(ids, { stripSpecials: true }); // ['a', 'dog']
 */
export class Vocabulary {
  readonly #tokens: readonly string[];
  readonly #ids: ReadonlyMap<string, number>;
  readonly #frequencies: readonly number[] | undefined;

  private constructor(tokens: readonly string[], frequencies?: readonly number[]) {
    for (let i = 0; i < SPECIAL_TOKENS.length; i++) {
      if (tokens[i] !== SPECIAL_TOKENS[i]) {
        throw new Error(`vocabulary: id ${i} must be '${SPECIAL_TOKENS[i]}', found '${tokens[i] ?? '(missing)'}'`);
      }
    }
    const ids = new Map<string, number>();
    tokens.forEach((token, id) => {
      if (ids.has(token))
        throw new Error(`vocabulary: token '${token}' appears twice (ids ${ids.get(token)} and ${id})`);
      ids.set(token, id);
    });
    if (frequencies !== undefined && frequencies.length !== tokens.length) {
      throw new Error(`vocabulary: ${frequencies.length} frequencies for ${tokens.length} tokens`);
    }
    this.#tokens = Object.freeze([...tokens]);
    this.#ids = ids;
    this.#frequencies = frequencies === undefined ? undefined : Object.freeze([...frequencies]);
  }

  /**
   * Builds a vocabulary from tokenised sentences. Words are ordered by count (descending), ties by
   * code-unit string order, so the same corpus always yields the same ids.
   *
   * Literal special strings in the data (e.g. a sentence containing `<unk>`) are not counted as words.
   * The result keeps {@link Vocabulary.frequencies}: each kept word's training count, and for `<unk>` the
   * number of training occurrences that fell out of the vocabulary.
   */
  static build(sentences: Iterable<readonly string[]>, options: BuildOptions = {}): Vocabulary {
    const minFreq = options.minFreq ?? 1;
    const maxSize = options.maxSize ?? Infinity;
    if (!(minFreq >= 1)) throw new RangeError(`vocabulary: minFreq must be >= 1, got ${minFreq}`);
    if (!(maxSize >= SPECIAL_TOKENS.length)) {
      throw new RangeError(`vocabulary: maxSize must be >= ${SPECIAL_TOKENS.length} (the specials), got ${maxSize}`);
    }

    const counts = new Map<string, number>();
    let total = 0;
    for (const sentence of sentences) {
      for (const token of sentence) {
        if (SPECIAL_TOKENS.includes(token)) continue;
        counts.set(token, (counts.get(token) ?? 0) + 1);
        total++;
      }
    }

    const ranked = [...counts].sort(([a, ca], [b, cb]) => cb - ca || (a < b ? -1 : a > b ? 1 : 0));
    const words = ranked.filter(([, c]) => c >= minFreq).slice(0, maxSize - SPECIAL_TOKENS.length);
    const kept = words.reduce((sum, [, c]) => sum + c, 0);

    const tokens = [...SPECIAL_TOKENS, ...words.map(([w]) => w)];
    const frequencies = [0, total - kept, 0, 0, ...words.map(([, c]) => c)];
    return new Vocabulary(tokens, frequencies);
  }

  /**
   * Restores a vocabulary from {@link Vocabulary.toJSON} output (e.g. a model card's `tokens`).
   * @param frequencies optional counts by id, as in {@link Vocabulary.frequencies}
   */
  static fromJSON(tokens: readonly string[], frequencies?: readonly number[]): Vocabulary {
    return new Vocabulary(tokens, frequencies);
  }

  /** Number of ids, specials included. */
  get size(): number {
    return this.#tokens.length;
  }

  /** Token strings by id. */
  get tokens(): readonly string[] {
    return this.#tokens;
  }

  /**
   * Training counts by id when the vocabulary was built (or restored with them); `undefined` otherwise.
   * `<pad>`, `<s>`, `</s>` count 0; `<unk>` counts the training tokens left out of the vocabulary.
   */
  get frequencies(): readonly number[] | undefined {
    return this.#frequencies;
  }

  /** Training count of `token`, or `undefined` when frequencies are not kept. Unknown tokens count 0. */
  count(token: string): number | undefined {
    if (this.#frequencies === undefined) return undefined;
    const id = this.#ids.get(token);
    return id === undefined ? 0 : this.#frequencies[id];
  }

  has(token: string): boolean {
    return this.#ids.has(token);
  }

  /** Id of `token`, `<unk>`'s id if it is not in the vocabulary. */
  id(token: string): number {
    return this.#ids.get(token) ?? SPECIALS.unk.id;
  }

  /** Token of `id`; throws on an id outside the vocabulary (a model/vocabulary mismatch). */
  token(id: number): string {
    const token = this.#tokens[id];
    if (token === undefined) throw new RangeError(`vocabulary: id ${id} is outside 0..${this.size - 1}`);
    return token;
  }

  /** Maps tokens to ids; unknown tokens become `<unk>`. */
  encode(tokens: readonly string[], options: EncodeOptions = {}): Int32Array {
    const offset = options.bos ? 1 : 0;
    const out = new Int32Array(tokens.length + offset + (options.eos ? 1 : 0));
    if (options.bos) out[0] = SPECIALS.bos.id;
    for (let i = 0; i < tokens.length; i++) out[i + offset] = this.id(tokens[i]!);
    if (options.eos) out[out.length - 1] = SPECIALS.eos.id;
    return out;
  }

  /** Maps ids back to tokens. */
  decode(ids: Iterable<number>, options: DecodeOptions = {}): string[] {
    const out: string[] = [];
    for (const id of ids) {
      if (options.stripSpecials && (id === SPECIALS.pad.id || id === SPECIALS.bos.id || id === SPECIALS.eos.id)) {
        continue;
      }
      out.push(this.token(id));
    }
    return out;
  }

  /** The token list by id: what a model card stores. */
  toJSON(): string[] {
    return [...this.#tokens];
  }
}
