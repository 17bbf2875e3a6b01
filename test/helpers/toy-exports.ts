/**
 * Cached exports of cached toy runs (toy-fixtures.ts) that keep what `exportRun` returned beside the
 * model: tests hold an export to its parity and precision check, which the model card does not record.
 * Unlike cachedToyModel, the export options are `frost export`'s own defaults (the best checkpoint)
 * unless they say otherwise, so a test that exported with defaults sees the same model it did.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MODEL_CARD_FILE, type ModelCard } from '../../core/runtime/model-card.ts';
import { exportRun, type ExportResult } from '../../export/export-run.ts';
import { initBackend } from '../../train/backend/select.ts';
import { cachedFixture } from './cached-fixture.ts';
import { cachedToyRun, type ToyExportOptions, type ToyRunSpec } from './toy-fixtures.ts';

/** An export of a toy run: `exportRun`'s result, with the run and its data. Every folder in it is read-only. */
export interface CachedToyExport extends ExportResult {
  dataDir: string;
  runDir: string;
}

type SavedResult = Pick<ExportResult, 'parity' | 'precisionCheck'>;
const RESULT_FILE = 'export-result.json';

/** The toy run of `spec` exported with `exportOpts` to a folder of its own (its card names it `model`). */
export async function cachedToyExport(spec: ToyRunSpec, exportOpts: ToyExportOptions = {}): Promise<CachedToyExport> {
  const { dataDir, runDir } = await cachedToyRun(spec);
  const dir = await cachedFixture({
    name: `toy-export-${slug(spec, exportOpts)}`,
    settings: { spec, exportOpts },
    helpers: ['toy-run.ts', 'toy-fixtures.ts', 'toy-exports.ts'],
    async build(into) {
      // Rebuilding the model for the parity check runs tfjs: on the wasm kernels, as training did.
      await initBackend({ prefer: 'wasm', quiet: true });
      const { parity, precisionCheck } = await exportRun(runDir, join(into, 'model'), { ...exportOpts, quiet: true });
      const saved: SavedResult = { parity, ...(precisionCheck ? { precisionCheck } : {}) };
      await writeFile(join(into, RESULT_FILE), JSON.stringify(saved));
    },
  });
  const outDir = join(dir, 'model');
  const card = JSON.parse(await readFile(join(outDir, MODEL_CARD_FILE), 'utf8')) as ModelCard;
  const saved = JSON.parse(await readFile(join(dir, RESULT_FILE), 'utf8')) as SavedResult;
  return { outDir, card, ...saved, dataDir, runDir };
}

/** Names the folder after what tells exports apart at a glance; the cache key tells apart the rest. */
function slug(spec: ToyRunSpec, exportOpts: ToyExportOptions): string {
  const arch = typeof spec.config?.arch === 'string' ? spec.config.arch : 'rnn-attn';
  return [arch, spec.head ?? 'learned', exportOpts.precision ?? 'fp32']
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-');
}
