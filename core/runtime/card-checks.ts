/**
 * Checks of a model card against itself (vocabularies, specials) and against the sessions created
 * from its graphs, so a mismatched export fails at load time naming the file rather than
 * mid-request with an ORT feed error.
 */
import { gatheredTables } from '../onnx/gathered-rows.ts';
import { stateOutput } from './append-cache.ts';
import type { InferenceSession } from 'onnxruntime-common';
import { SPECIALS, Vocabulary } from '../vocab.ts';
import type { LmCard } from './lm-card.ts';
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
  for (const name of graphs.encoder.inputs) {
    if (!encoder.inputNames.includes(name)) {
      throw new Error(`${encWhere}: encoder has no input '${name}' (inputs: ${encoder.inputNames.join(', ')})`);
    }
  }
  for (const name of [...graphs.encoder.outputs, ...graphs.decoder.state, ...graphs.decoder.memory]) {
    if (!encoder.outputNames.includes(name)) {
      throw new Error(`${encWhere}: encoder has no output '${name}' (outputs: ${encoder.outputNames.join(', ')})`);
    }
  }
  const cache = graphs.decoder.cache;
  const wanted = [
    graphs.decoder.token,
    ...graphs.decoder.state,
    ...graphs.decoder.memory,
    ...(cache ? [cache.length] : []),
  ];
  for (const name of Object.keys(cache?.states ?? {})) {
    if (!graphs.decoder.state.includes(name))
      throw new Error(`${decWhere}: the model card's graphs.decoder.cache names '${name}', which is not a state`);
  }
  for (const name of wanted) {
    if (!decoder.inputNames.includes(name)) {
      throw new Error(`${decWhere}: decoder has no input '${name}' (inputs: ${decoder.inputNames.join(', ')})`);
    }
  }
  for (const name of decoder.inputNames) {
    if (!wanted.includes(name)) throw new Error(`${decWhere}: decoder input '${name}' is not named in the model card`);
  }
  const top = graphs.decoder.top ? [graphs.decoder.top.logProbs, graphs.decoder.top.tokens] : [];
  for (const name of [
    graphs.decoder.logProbs,
    ...top,
    ...graphs.decoder.state.map((s) => stateOutput(graphs.decoder, s)),
  ]) {
    if (!decoder.outputNames.includes(name)) {
      throw new Error(`${decWhere}: decoder has no output '${name}' (outputs: ${decoder.outputNames.join(', ')})`);
    }
  }
  checkWidth(decWhere, decoder, graphs.decoder.logProbs, card.target.tokens.length, targetVocabulary(card));
  if (graphs.decoder.top) {
    const { k } = graphs.decoder.top;
    for (const name of top) checkWidth(decWhere, decoder, name, k, `the model card's graphs.decoder.top.k is ${k}`);
  }
}

/**
 * Checks a translation card's source vocabulary against the encoder's source embedding, the table `src_ids` index
 * (read from the graph's bytes: a session's metadata does not say): an id past its rows fails mid-request, failing
 * every request that carries the word, and a table with more rows than the card has tokens silently gives words the
 * wrong rows. An embedding the graph computes rather than stores cannot be sized, and is not checked.
 * @throws Error naming the graph (`where`), the table and both numbers of a mismatch
 */
export function checkSourceVocabulary(card: ModelCard, encoderBytes: Uint8Array, where: string): void {
  if (card.task !== 'translation') return;
  let tables;
  try {
    tables = gatheredTables(encoderBytes, 'src_ids');
  } catch {
    return; // not decodable here: onnxruntime opened it, and the sessions' checks still apply
  }
  const section = card.source ? 'source' : 'target';
  const size = (card.source ?? card.target).tokens.length;
  for (const t of tables) {
    if (t.rows !== size)
      throw new Error(
        `${where}: the source embedding '${t.initializer}' has ${t.rows} rows in the graph, but the model card's ${section} vocabulary (${section}.tokens) has ${size} tokens`,
      );
  }
}

/**
 * Checks a language model's step session against its card: the inputs and outputs it names, its
 * vocabulary against the width of `log_probs`, and its state size against the state inputs.
 * @throws Error naming the graph (`where`) and both numbers of a mismatch
 */
export function checkLmGraph(card: LmCard, session: InferenceSession, where: string): void {
  const step = card.graphs.step;
  const missing = [step.token, ...step.state].filter((n) => !session.inputNames.includes(n));
  const outs = [step.logProbs, ...step.state.map((n) => `next_${n}`)].filter((n) => !session.outputNames.includes(n));
  if (missing.length > 0 || outs.length > 0)
    throw new Error(
      `model card '${card.name}': ${step.file} lacks ${[...missing.map((n) => `input '${n}'`), ...outs.map((n) => `output '${n}'`)].join(', ')}`,
    );
  checkWidth(where, session, step.logProbs, card.target.tokens.length, targetVocabulary(card));
  for (const name of step.state)
    checkWidth(where, session, name, step.stateSize, `the model card's graphs.step.stateSize is ${step.stateSize}`);
}

const targetVocabulary = (card: Pick<LmCard, 'target'>) =>
  `the model card's target vocabulary (target.tokens) has ${card.target.tokens.length} tokens`;

/**
 * The last dimension of an input or output as the graph declares it, when it declares a number there
 * (a symbolic or missing shape cannot be checked; nor can a backend without metadata, such as webgl).
 */
function declaredWidth(session: InferenceSession, name: string): number | undefined {
  let values: readonly InferenceSession.ValueMetadata[] | undefined;
  try {
    values = [...(session.inputMetadata ?? []), ...(session.outputMetadata ?? [])];
  } catch {
    return undefined;
  }
  const value = values.find((v) => v.name === name);
  const last = value?.isTensor ? value.shape.at(-1) : undefined;
  return typeof last === 'number' && last >= 0 ? last : undefined;
}

/** A card that says one width and a graph that declares another would decode garbage or fail mid-request. */
function checkWidth(where: string, session: InferenceSession, name: string, want: number, said: string): void {
  const width = declaredWidth(session, name);
  if (width !== undefined && width !== want)
    throw new Error(`${where}: '${name}' is ${width} wide in the graph, but ${said}`);
}
