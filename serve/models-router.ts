/** `GET /v1/models`: the loaded models' cards, without their vocabularies. */
import { Router } from 'express';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { ModelSummary, ModelsResponse } from '../core/wire.ts';
import type { ModelRegistry } from './model-registry.ts';

export function modelsRouter(registry: ModelRegistry): Router {
  const router = Router();
  router.get('/v1/models', (_req, res) => {
    const body: ModelsResponse = {
      default: registry.defaultName ?? null,
      models: registry.list().map((m) => summarise(m.runtime.card)),
    };
    res.json(body);
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
