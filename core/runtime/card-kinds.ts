/**
 * The kinds of model a card describes, by its `task`: which schema the card follows and which family
 * of runtime runs it. The server, its decode threads and the browser page ask this registry what a
 * card is, rather than testing its task themselves; a new kind of model is one more registration.
 */
import { Registry } from '../registry.ts';
import { parseLmCard, type LmCard } from './lm-card.ts';
import { parseModelCard, type ModelCard } from './model-card.ts';

/** A card of any kind. */
export type AnyCard = ModelCard | LmCard;

/**
 * How a model runs: `seq2seq` is an encoder and a decoder graph (translation, captioning: `/v1/translate`,
 * `/v1/caption`), `lm` a language model's one step graph (`/v1/score`, `/v1/complete`).
 */
export type ModelFamily = 'seq2seq' | 'lm';

export interface CardKind {
  readonly family: ModelFamily;
  /** @throws Error naming `where` when `text` is not a valid card of this kind */
  parse(text: string, where: string): AnyCard;
}

/** The kinds of model, by the card's `task`. */
export const cardKinds = new Registry<CardKind>('model task');

const seq2seq: CardKind = { family: 'seq2seq', parse: parseModelCard };
cardKinds.register('translation', seq2seq);
cardKinds.register('caption', seq2seq);
cardKinds.register('lm', { family: 'lm', parse: parseLmCard });

/** The task a card's text names, or undefined when the text is not JSON or names none. */
export function cardTask(text: string): string | undefined {
  try {
    const task = (JSON.parse(text) as { task?: unknown } | null)?.task;
    return typeof task === 'string' ? task : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The family a card's text names by its task, without checking the rest of the card (a cheap look before
 * loading); undefined when the text is not JSON or names no known task.
 */
export function cardTextFamily(text: string): ModelFamily | undefined {
  return cardKinds.find(cardTask(text) ?? '')?.family;
}

/**
 * Parses a card of any kind with its kind's schema. A card that is not JSON or names no task is read as a
 * translation card, whose schema then says what is wrong with it.
 * @throws Error naming `where`: invalid JSON, an unknown task, or a card not valid for its task
 */
export function parseAnyCard(text: string, where: string): { kind: CardKind; card: AnyCard } {
  const task = cardTask(text) ?? 'translation';
  const kind = cardKinds.find(task);
  if (!kind) throw new Error(`${where}: unknown model task '${task}'; known: ${cardKinds.names().join(', ')}`);
  return { kind, card: kind.parse(text, where) };
}

/** The family of a parsed card's model. */
export function familyOf(card: AnyCard): ModelFamily {
  return cardKinds.get(card.task).family;
}
