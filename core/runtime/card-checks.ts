/**
 * Checks of a model card against itself (vocabularies, specials) and against the sessions created
 * from its graphs, so a mismatched export fails at load time naming the file rather than
 * mid-request with an ORT feed error.
 */
import type { InferenceSession } from 'onnxruntime-common';
import { SPECIALS, Vocabulary } from '../vocab.ts';
import type { ModelCard } from './model-card.ts';

/**
 * The vocabularies a card names (its tokeniser comes from card-tokenizer.ts). A card without a source
 * vocabulary shares the target one.
 * @throws Error naming the card section at fault
 */
export function readVocabularies(card: ModelCard): { source: Vocabulary; target: Vocabulary } {
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
export function checkGraphs(
  card: ModelCard,
  encoder: InferenceSession,
  decoder: InferenceSession,
  locate: (file: string) => string,
): void {
  const { graphs } = card;
  const encWhere = locate(graphs.encoder.file);
  const decWhere = locate(graphs.decoder.file);
  const feedable = ENCODER_INPUTS[card.task];
  for (const name of encoder.inputNames) {
    if (!feedable.includes(name)) {
      throw new Error(
        `${encWhere}: encoder input '${name}' is not one the runtime can feed to a ${card.task} model (${feedable.join(', ')})`,
      );
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
  const top = graphs.decoder.top ? [graphs.decoder.top.logProbs, graphs.decoder.top.tokens] : [];
  for (const name of [graphs.decoder.logProbs, ...top, ...graphs.decoder.state.map((s) => `next_${s}`)]) {
    if (!decoder.outputNames.includes(name)) {
      throw new Error(`${decWhere}: decoder has no output '${name}' (outputs: ${decoder.outputNames.join(', ')})`);
    }
  }
}
