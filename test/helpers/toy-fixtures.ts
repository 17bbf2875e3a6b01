/**
 * Cached trained toy translation runs and their exports (cached-fixture.ts), for tests that need a
 * real trained model of some architecture and head but do not test training itself. The same spec
 * gives the same folder to every test file of a run and to later runs until the code changes.
 * The folders are shared: read them, export from them, serve them; copy them (copyFixture) before
 * writing into them.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MODEL_CARD_FILE, type ModelCard } from '../../core/runtime/model-card.ts';
import { exportRun, type ExportOptions } from '../../export/export-run.ts';
import { initBackend } from '../../train/backend/select.ts';
import { cachedFixture } from './cached-fixture.ts';
import { trainToyRun } from './toy-run.ts';

/** What trainToyRun takes: the corpus size and the run config's overrides (`config.arch` picks the architecture). */
export type ToyRunSpec = NonNullable<Parameters<typeof trainToyRun>[1]>;

const HELPERS = ['toy-run.ts', 'toy-fixtures.ts'] as const;

/** A trained toy run: its data (`frost data toy` layout) and run folder. */
export async function cachedToyRun(spec: ToyRunSpec = {}): Promise<{ dataDir: string; runDir: string }> {
  const dir = await cachedFixture({
    name: `toy-run-${slug(spec)}`,
    settings: spec,
    helpers: HELPERS,
    async build(into) {
      await initBackend({ prefer: 'wasm', quiet: true });
      await trainToyRun(into, spec);
    },
  });
  return { dataDir: join(dir, 'toy'), runDir: join(dir, 'run') };
}

/** Export options a cached export may vary (none that write elsewhere, such as a Triton repository). */
export type ToyExportOptions = Omit<ExportOptions, 'quiet' | 'triton'>;

/**
 * A trained toy run exported with `exportOpts` (checkpoint `last` unless they say otherwise) to a folder
 * named `exportOpts.name ?? 'toy'`, beside its run: a server given `modelsDir` finds it.
 */
export async function cachedToyModel(
  spec: ToyRunSpec = {},
  exportOpts: ToyExportOptions = {},
): Promise<{ dataDir: string; runDir: string; modelDir: string; modelsDir: string; card: ModelCard }> {
  const { dataDir, runDir } = await cachedToyRun(spec);
  const name = exportOpts.name ?? 'toy';
  const dir = await cachedFixture({
    name: `toy-model-${slug(spec)}`,
    settings: { spec, exportOpts },
    helpers: HELPERS,
    async build(into) {
      // Rebuilding the model for the parity check runs tfjs: on the wasm kernels, as training did.
      await initBackend({ prefer: 'wasm', quiet: true });
      await exportRun(runDir, join(into, 'models', name), { checkpoint: 'last', ...exportOpts, name, quiet: true });
    },
  });
  const modelsDir = join(dir, 'models');
  const modelDir = join(modelsDir, name);
  const card = JSON.parse(await readFile(join(modelDir, MODEL_CARD_FILE), 'utf8')) as ModelCard;
  return { dataDir, runDir, modelDir, modelsDir, card };
}

function slug(spec: ToyRunSpec): string {
  const arch = typeof spec.config?.arch === 'string' ? spec.config.arch : 'rnn-attn';
  return `${arch}-${spec.head ?? 'learned'}`.toLowerCase().replace(/[^a-z0-9-]+/g, '-');
}
