/** `GET /v1/models`: the loaded models' cards, without their vocabularies. */
import { Router } from 'express';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { LmCard } from '../core/runtime/lm-card.ts';
import type { FolderRefusal, LmModelSummary, ModelSummary, ModelsResponse } from '../core/wire.ts';
import type { LanguageModels } from './lm-models.ts';
import type { ModelRegistry } from './model-registry.ts';

export function modelsRouter(
  registry: ModelRegistry,
  languageModels?: LanguageModels,
  refused: () => readonly FolderRefusal[] = () => [],
): Router {
  const router = Router();
  router.get('/v1/models', (_req, res) => {
    const lms = languageModels?.names ?? [];
    const bad = refused();
    const body: ModelsResponse = {
      default: registry.defaultName ?? null,
      models: registry.list().map((m) => summarise(m.runtime.card)),
      ...(lms.length > 0
        ? {
            language_models: lms.map((name) => summariseLm(languageModels!.get(name).runtime.card)),
            default_language_model: languageModels!.defaultName ?? null,
          }
        : {}),
      ...(bad.length > 0 ? { refused: [...bad] } : {}),
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

function summariseLm(card: LmCard): LmModelSummary {
  const { target, ...rest } = card;
  return { ...rest, target: { lang: target.lang, size: target.tokens.length } };
}
