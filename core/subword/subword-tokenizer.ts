/**
 * Subword models as a frost {@link Tokenizer}: `tokenize` gives a sentence's pieces, `detokenize` turns pieces
 * back into text. Every piece is in the model's vocabulary, so the frost {@link Vocabulary} made from the
 * model's tokens never maps a piece to `<unk>`. Training, export, `frost translate`, `frost serve` and the
 * browser page all go through this one object (built by {@link loadSubwordTokenizer} from a model card).
 *
 * Isomorphic: no Node APIs; files are read through the caller's `read` function.
 */
import type { Tokenizer } from '../text/tokenize.ts';
import { Vocabulary } from '../vocab.ts';
import { SubwordModel, SubwordModelError } from './subword-model.ts';
import type { SubwordKind } from './subword-spec.ts';

/** The tokeniser name a model card or run config gives for subword models. */
export const SUBWORD_TOKENIZER = 'sentencepiece';

/** A tokeniser over one subword model per language (the same model for every language with a joint vocabulary). */
export class SubwordTokenizer implements Tokenizer {
  readonly name = SUBWORD_TOKENIZER;
  readonly #models: ReadonlyMap<string, SubwordModel>;

  constructor(models: ReadonlyMap<string, SubwordModel> | Record<string, SubwordModel>) {
    this.#models = models instanceof Map ? models : new Map(Object.entries(models));
    if (this.#models.size === 0) throw new TypeError("SubwordTokenizer: 'models' must name at least one language");
  }

  /** The model of `lang`; the error lists the languages there are. */
  model(lang: string): SubwordModel {
    const model = this.#models.get(lang);
    if (model === undefined) {
      throw new RangeError(`no subword model for '${lang}' (models: ${[...this.#models.keys()].join(', ')})`);
    }
    return model;
  }

  tokenize(text: string, lang: string): string[] {
    return this.model(lang).encodeAsPieces(text);
  }

  detokenize(tokens: readonly string[], lang: string): string {
    return this.model(lang).decodePieces(tokens);
  }
}

/**
 * Reads the subword model files a card or run config names and checks each against the vocabulary it is
 * paired with: a model whose pieces differ from the vocabulary's tokens (a file from another run), or whose type
 * is not the card's, is refused, naming the file.
 *
 * @param files model file by language
 * @param vocabularies the tokens each language's ids stand for (card `source`/`target` tokens)
 * @param read returns a file's bytes (fs in Node, fetch in the browser)
 * @param locate how a file is named in errors (its path or URL)
 * @param kind the model type the card says (`subword.kind`): a file of another type is refused
 */
export async function loadSubwordTokenizer(
  files: Readonly<Record<string, string>>,
  vocabularies: Readonly<Record<string, readonly string[]>>,
  read: (file: string) => Promise<Uint8Array>,
  locate: (file: string) => string = (file) => file,
  kind?: SubwordKind,
): Promise<SubwordTokenizer> {
  const byFile = new Map<string, SubwordModel>();
  const models = new Map<string, SubwordModel>();
  for (const [lang, file] of Object.entries(files)) {
    let model = byFile.get(file);
    if (model === undefined) {
      let bytes: Uint8Array;
      try {
        bytes = await read(file);
      } catch (err) {
        throw new SubwordModelError(locate(file), `cannot read the subword model (${(err as Error).message})`, {
          cause: err,
        });
      }
      model = SubwordModel.fromBytes(bytes, locate(file));
      if (kind !== undefined && model.kind !== kind) {
        throw new SubwordModelError(locate(file), `is a ${model.kind} model, but its card or run config says ${kind}`);
      }
      byFile.set(file, model);
    }
    const tokens = vocabularies[lang];
    if (tokens !== undefined) checkMatchesVocabulary(model, tokens, locate(file), lang);
    models.set(lang, model);
  }
  return new SubwordTokenizer(models);
}

/** Refuses a model whose pieces are not exactly `tokens`, naming the first difference. */
function checkMatchesVocabulary(model: SubwordModel, tokens: readonly string[], where: string, lang: string): void {
  const pieces = model.tokens;
  if (pieces.length !== tokens.length) {
    throw new SubwordModelError(
      where,
      `has ${pieces.length} pieces, but the ${lang} vocabulary has ${tokens.length} tokens (a model from another run?)`,
    );
  }
  const at = pieces.findIndex((p, i) => p !== tokens[i]);
  if (at >= 0) {
    throw new SubwordModelError(
      where,
      `piece ${at} is '${pieces[at]}', but the ${lang} vocabulary has '${tokens[at]}' (a model from another run?)`,
    );
  }
}

/**
 * The frost vocabulary of a subword model: its pieces by id, with each piece's count in `sentences` (what the
 * report's norm-vs-frequency analysis reads). `<unk>` counts 0: nothing is ever out of vocabulary.
 */
export function subwordVocabulary(model: SubwordModel, sentences: Iterable<string>): Vocabulary {
  const counts = new Array<number>(model.size).fill(0);
  for (const sentence of sentences) for (const id of model.encode(sentence)) counts[id]!++;
  return Vocabulary.fromJSON(model.tokens, counts);
}
