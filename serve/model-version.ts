import { createHash } from 'node:crypto';

/**
 * Which version of a model answered: the first 12 hex digits of the SHA-256 of its card as served. A new export of
 * the same model (another `created`, other graphs and so other recorded sizes) is another version, so behind a load
 * balancer during a rolling update each answer says which one produced it (`X-Model-Version`).
 */
export const MODEL_VERSION_HEADER = 'X-Model-Version';

const versions = new WeakMap<object, string>();

/** The version of the model whose served card is `card` (computed once per card). */
export function modelVersion(card: object): string {
  let version = versions.get(card);
  if (version === undefined) {
    version = createHash('sha256').update(JSON.stringify(card)).digest('hex').slice(0, 12);
    versions.set(card, version);
  }
  return version;
}
