import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { NewRunFlags } from '../../clients/cli/commands/train-config.ts';
import { corpusBleu } from '../../core/metrics/bleu.ts';
import { loadModelDir } from '../../core/runtime/load-node.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import { exportRun, type ExportOptions } from '../../export/export-run.ts';
import { resolveArchConfig } from '../../models/index.ts';
import { initBackend } from '../../train/backend/select.ts';
import { writeToyCorpus } from '../../train/data/fetch.ts';
import {
  translationConfigSchema,
  type TranslationRunConfig,
  type TranslationRunConfigInput,
} from '../../train/run-config.ts';
import { train } from '../../train/trainer.ts';

/** The toy corpus the end-to-end tests train on: a ~200-word lexicon a tiny model learns in a few epochs. */
export const TOY_CORPUS = { seed: 1, train: 6000, val: 200, test: 200, lexiconScale: 0.2 } as const;

export interface ToyCorpusSize {
  seed: number;
  train: number;
  val: number;
  test: number;
}

/** Writes a toy corpus to `dataDir` (the `frost data toy` layout). */
export async function writeToyData(dataDir: string, size: ToyCorpusSize = TOY_CORPUS): Promise<string> {
  await writeToyCorpus(dataDir, { ...size, lexiconScale: TOY_CORPUS.lexiconScale });
  return dataDir;
}

/**
 * A run config for a tiny model on a toy corpus: rnn-attn unless `extra.arch` names another
 * architecture (its tiny preset, with `extra.archConfig` applied); `extra` overrides any other field.
 */
export function toyRunConfig(
  dataDir: string,
  head: string,
  extra: Partial<TranslationRunConfigInput> = {},
): TranslationRunConfig {
  const { archConfig, ...rest } = extra;
  const arch = extra.arch ?? 'rnn-attn';
  return translationConfigSchema.parse({
    arch,
    preset: 'tiny',
    archConfig: resolveArchConfig(arch, 'tiny', archConfig),
    head: { name: head },
    data: { dir: dataDir, kind: 'plain', src: 'src', tgt: 'tgt' },
    tokenizer: 'whitespace',
    vocab: { minFreq: 1 },
    optim: { learningRate: 5e-3 },
    ...rest,
  });
}

/** `frost train`'s parsed flags for a tiny translation run on `dataDir`, as the CLI hands them to newRunConfig. */
export function toyRunFlags(dataDir: string, extra: Partial<NewRunFlags> = {}): NewRunFlags {
  return {
    task: 'translation',
    head: 'learned',
    data: dataDir,
    preset: 'tiny',
    set: {},
    headOption: {},
    seed: 1,
    ...extra,
  };
}

/** Writes a toy corpus under `dir/toy` and trains a tiny model on it in `dir/run`. */
export async function trainToyRun(
  dir: string,
  opts: { head?: string; corpus?: ToyCorpusSize; config?: Partial<TranslationRunConfigInput> } = {},
): Promise<{ dataDir: string; runDir: string }> {
  const dataDir = await writeToyData(join(dir, 'toy'), opts.corpus);
  const runDir = join(dir, 'run');
  const result = await train(toyRunConfig(dataDir, opts.head ?? 'learned', opts.config), runDir, { quiet: true });
  result.model.params.dispose();
  return { dataDir, runDir };
}

/**
 * Trains a toy run in `dir` (see {@link trainToyRun}) on the wasm backend and exports its last checkpoint as
 * `name` to `dir/models/name`, where a server given `dir/models` finds it.
 */
export async function trainAndExportToyRun(
  dir: string,
  name: string,
  opts: Parameters<typeof trainToyRun>[1] = {},
  exportOpts: Pick<ExportOptions, 'decoderCache'> = {},
): Promise<{ runDir: string; modelDir: string; card: ModelCard }> {
  await initBackend({ prefer: 'wasm', quiet: true });
  const { runDir } = await trainToyRun(dir, opts);
  const modelDir = join(dir, 'models', name);
  const { card } = await exportRun(runDir, modelDir, { checkpoint: 'last', quiet: true, name, ...exportOpts });
  return { runDir, modelDir, card };
}

/**
 * The toy corpus end to end: a tiny `arch` model (the learned head) trained for `epochs` at a constant learning rate
 * on the full toy corpus, its best checkpoint (picked on 50 validation sentences per epoch; decoding all 200 would
 * add a third to the time) exported with parity, and its greedy test BLEU through onnxruntime-node.
 */
export async function toyBleuRun(
  dir: string,
  arch: string,
  opts: { epochs: number; learningRate: number },
): Promise<{ card: ModelCard; parity: number; bleu: number }> {
  const dataDir = await writeToyData(join(dir, 'toy'));
  const runDir = join(dir, 'run');
  const config = toyRunConfig(dataDir, 'learned', {
    arch,
    epochs: opts.epochs,
    valSentences: 50,
    optim: { learningRate: opts.learningRate },
  });
  const result = await train(config, runDir, { quiet: true });
  result.model.params.dispose();
  const modelDir = join(dir, 'model');
  const { card, parity } = await exportRun(runDir, modelDir, { quiet: true });
  return { card, parity: parity.maxScaledDiff, bleu: await toyTestBleu(modelDir, dataDir) };
}

/** Greedy corpus BLEU of an exported model on the toy test split, decoded through onnxruntime-node. */
export async function toyTestBleu(modelDir: string, dataDir: string): Promise<number> {
  const runtime = await loadModelDir(modelDir);
  const src = (await readFile(join(dataDir, 'test.src'), 'utf8')).trim().split('\n');
  const ref = (await readFile(join(dataDir, 'test.tgt'), 'utf8')).trim().split('\n');
  const out = await runtime.translate(src, { beam: 1 });
  await runtime.release();
  return corpusBleu(
    out.map((t) => t.text),
    [ref],
  ).score;
}
