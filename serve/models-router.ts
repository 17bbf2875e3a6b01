/** `GET /v1/models`: the loaded models' cards without their vocabularies, each family under its own keys. */
import { Router } from 'express';
import type { FolderRefusal, ModelsResponse } from '../core/wire.ts';
import type { ModelRegistry } from './model-registry.ts';
import { servedFamily, servedFamilyNames } from './served-families.ts';

export function modelsRouter(registry: ModelRegistry, refused: () => readonly FolderRefusal[] = () => []): Router {
  const router = Router();
  router.get('/v1/models', (_req, res) => {
    const body: Partial<Record<keyof ModelsResponse, unknown>> = {};
    for (const family of servedFamilyNames()) {
      const { listing } = servedFamily(family);
      const models = registry.list(family);
      if (models.length === 0 && !listing.always) continue;
      body[listing.defaultKey] = registry.defaultName(family) ?? null;
      body[listing.key] = models.map((m) => listing.summarise(m.runtime.card));
    }
    const bad = refused();
    if (bad.length > 0) body.refused = [...bad];
    res.json(body);
  });
  return router;
}
