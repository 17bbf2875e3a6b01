/** `GET /v1/models`: the loaded models' cards, without their vocabularies. */
import { Router } from 'express';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { ModelRegistry } from './model-registry.ts';

/** A card as `GET /v1/models` lists it: the vocabularies replaced by their sizes. */
export type ModelSummary = Omit<ModelCard, 'source' | 'target'> & {
  source?: { lang: string; size: number };
  target: { lang: string; size: number };
};

export function modelsRouter(registry: ModelRegistry): Router {
  const router = Router();
  router.get('/v1/models', (_req, res) => {
    res.json({ default: registry.defaultName ?? null, models: registry.list().map((m) => summarise(m.runtime.card)) });
  });
  return router;
}

/** The card without its token lists, which can be tens of thousands of strings. */
function summarise(card: ModelCard): ModelSummary {
  const { source, target, ...rest } = card;
  return {
    ...rest,
    ...(source ? { source: { lang: source.lang, size: source.tokens.length } } : {}),
    target: { lang: target.lang, size: target.tokens.length },
  };
}
