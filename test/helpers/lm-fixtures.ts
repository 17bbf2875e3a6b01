/**
 * Cached trained language-model runs on the Markov corpus (lm-run.ts) and their exports
 * (cached-fixture.ts), for tests that need a real trained LM but do not test training itself. The
 * same spec gives the same folder to every test file of a run and to later runs until the code
 * changes. The folders are shared: read them, export from them, serve them; copy them
 * (copyFixture) before writing into them (`frost eval` and `frost report` write eval.json).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LmCard } from '../../core/runtime/lm-card.ts';
import { MODEL_CARD_FILE } from '../../core/runtime/model-card.ts';
import { exportRun, type ExportOptions } from '../../export/export-run.ts';
import { initBackend } from '../../train/backend/select.ts';
import type { LmRunConfigInput } from '../../train/run-config.ts';
import { train } from '../../train/trainer.ts';
import { cachedFixture } from './cached-fixture.ts';
import { tinyLmConfig, writeMarkovCorpus } from './lm-run.ts';

/** A run: the Markov corpus's split sizes, and tinyLmConfig's overrides. */
export interface LmRunSpec {
  tokens?: { train: number; valid: number; test: number };
  config?: Partial<LmRunConfigInput>;
}

/**
 * One epoch of tinyLmConfig on a small corpus: *a* trained language model, shared by the tests that
 * only need one (serving, reports, the browser page). Vary `config.head` or `config.seed` for a second.
 */
export const SMALL_LM: LmRunSpec = { tokens: { train: 5000, valid: 800, test: 800 }, config: { epochs: 1 } };

const HELPERS = ['lm-run.ts', 'lm-fixtures.ts'] as const;
/** Beside the run: what train() returned. */
const TRAINED = 'trained.json';

/** What train() returned for a cached run, kept beside it. */
export interface LmTrained {
  epochs: number;
  steps: number;
  bestValPerplexity: number;
}

/**
 * The Markov corpus of these split sizes (writeMarkovCorpus's by default), its folder of
 * train/valid/test.txt. Runs of one size share it: a report pairs runs on one corpus only.
 */
export async function cachedMarkovCorpus(tokens?: LmRunSpec['tokens']): Promise<string> {
  const dir = await cachedFixture({
    name: 'markov-corpus',
    settings: { tokens: tokens ?? 'default' },
    helpers: HELPERS,
    build: (into) => writeMarkovCorpus(into, tokens).then(() => undefined),
  });
  return join(dir, 'markov');
}

/** A trained LM run: its corpus folder, run folder, and what training returned. */
export async function cachedLmRun(
  spec: LmRunSpec = SMALL_LM,
): Promise<{ dataDir: string; runDir: string; trained: LmTrained }> {
  const dataDir = await cachedMarkovCorpus(spec.tokens);
  const dir = await cachedFixture({
    name: `lm-run-${slug(spec)}`,
    settings: spec,
    helpers: HELPERS,
    async build(into) {
      await initBackend({ prefer: 'wasm', quiet: true });
      const result = await train(tinyLmConfig(dataDir, spec.config), join(into, 'run'), { quiet: true });
      result.model.params.dispose();
      const { epochs, steps, bestValPerplexity } = result;
      await writeFile(join(into, TRAINED), JSON.stringify({ epochs, steps, bestValPerplexity } satisfies LmTrained));
    },
  });
  const trained = JSON.parse(await readFile(join(dir, TRAINED), 'utf8')) as LmTrained;
  return { dataDir, runDir: join(dir, 'run'), trained };
}

/** Export options a cached export may vary (none that write elsewhere). */
export type LmExportOptions = Omit<ExportOptions, 'quiet' | 'triton'>;

/**
 * A trained LM run exported with `exportOpts` to a folder named `exportOpts.name ?? 'lm-tiny'` in
 * `modelsDir`, alone there.
 */
export async function cachedLmModel(
  spec: LmRunSpec = SMALL_LM,
  exportOpts: LmExportOptions = {},
): Promise<{ dataDir: string; runDir: string; modelDir: string; modelsDir: string; card: LmCard }> {
  const { dataDir, runDir } = await cachedLmRun(spec);
  const name = exportOpts.name ?? 'lm-tiny';
  const dir = await cachedFixture({
    name: `lm-model-${slug(spec)}`,
    settings: { spec, exportOpts },
    helpers: HELPERS,
    async build(into) {
      await initBackend({ prefer: 'wasm', quiet: true });
      await exportRun(runDir, join(into, 'models', name), { ...exportOpts, name, quiet: true });
    },
  });
  const modelsDir = join(dir, 'models');
  const modelDir = join(modelsDir, name);
  const card = JSON.parse(await readFile(join(modelDir, MODEL_CARD_FILE), 'utf8')) as LmCard;
  return { dataDir, runDir, modelDir, modelsDir, card };
}

/** The head, to tell the folders apart (cachedFixture keys the settings). */
function slug(spec: LmRunSpec): string {
  return (spec.config?.head?.name ?? 'learned').toLowerCase().replace(/[^a-z0-9-]+/g, '-');
}
