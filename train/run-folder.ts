import { existsSync, readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SubwordSpec } from '../core/subword/subword-spec.ts';
import type { Tokenizer } from '../core/text/tokenize.ts';
import { Vocabulary } from '../core/vocab.ts';
import {
  buildLanguageModel,
  buildModel,
  type LanguageModel,
  type ModelSizes,
  type Seq2SeqModel,
} from '../models/index.ts';
import { inferenceTensors } from './optim/parameter-average.ts';
import { averageCheckpoints, loadCheckpoint, restoreTensors, type LoadedCheckpoint } from './checkpoint.ts';
import { expectTask, readRunConfig, RUN_FILES, type RunConfig, type TaskName } from './run-config.ts';
import { checkOutputRows, outputRows } from './output-support.ts';
import { newestWholeSave } from './resume-checkpoint.ts';
import { readFairseqFiles, readMarianFiles, readSubwords, runTokenizer } from './subwords.ts';

/**
 * A training run's folder as everything after training reads it (export, report, experiments):
 * its config, vocabularies and checkpoints, and the trained model rebuilt from them. The trainer
 * writes the folder (train/trainer.ts); nothing else needs to know its layout.
 */

/** Which checkpoint: the best validation score, or the latest save. */
export type CheckpointName = 'best' | 'last';

/**
 * What a report needs to know about a checkpoint without loading its tensors: which one `frost
 * export` picks, its SHA-256 (the key of every cached measurement) and where training was.
 */
export interface CheckpointInfo {
  which: CheckpointName;
  dir: string;
  /** SHA-256 of tensors.bin, from the manifest (train/checkpoint.ts verifies it on load). */
  sha256: string;
  step: number;
  epoch: number;
  /** The trainer's state saved with it (done, stopReason, bestBleu, elapsedMs, ...). */
  state: Record<string, unknown>;
}

export class RunFolder<Config extends RunConfig = RunConfig> {
  private constructor(
    readonly dir: string,
    readonly config: Config,
  ) {}

  /**
   * Opens a run folder of any task.
   * @throws Error naming the folder when it holds no run, or its config when that is invalid
   */
  static async open(dir: string): Promise<RunFolder> {
    return new RunFolder(dir, await readRunConfig(dir));
  }

  /** Opens a run of one task; a run of another task is refused, naming it. */
  static async openTask<T extends TaskName>(dir: string, task: T): Promise<RunFolder<Extract<RunConfig, { task: T }>>> {
    const config = expectTask(await readRunConfig(dir), task, `${dir}: this reader`);
    return new RunFolder(dir, config);
  }

  /** Whether `dir` holds a run (a config file). */
  static exists(dir: string): boolean {
    return existsSync(runPath(dir, 'config'));
  }

  /** Path of one of the run's files. */
  path(file: RunFile): string {
    return runPath(this.dir, file);
  }

  /** The source or target vocabulary the run was trained with. */
  vocab(side: 'src' | 'tgt'): Promise<Vocabulary> {
    return readVocab(this.path(side === 'src' ? 'srcVocab' : 'tgtVocab'));
  }

  /** The tokeniser the run trained with: a word tokeniser by name, or its subword models checked against `vocabs`. */
  tokenizer(vocabs: Readonly<Record<string, Vocabulary>>): Promise<Tokenizer> {
    return runTokenizer(this.config, this.dir, vocabs);
  }

  /** Imported Marian runs: the card's `marian` block and the SentencePiece files to export; undefined otherwise. */
  marianFiles(): ReturnType<typeof readMarianFiles> {
    return readMarianFiles(this.config, this.dir);
  }

  /** Imported fairseq runs: the card's `fairseq` block and its BPE file to export; undefined otherwise. */
  fairseqFiles(): ReturnType<typeof readFairseqFiles> {
    return readFairseqFiles(this.config, this.dir);
  }

  /** Subword runs: the card's `subword` block and the `.model` files to export; undefined for word runs. */
  subwords(langs: readonly string[]): Promise<{ spec: SubwordSpec; files: Record<string, Uint8Array> } | undefined> {
    return readSubwords(this.config, this.dir, langs);
  }

  checkpointDir(which: CheckpointName): string {
    return checkpointDir(this.dir, which);
  }

  /**
   * The folder of the checkpoint to export: `which`, or `last` when `best` was asked for and
   * no validation score ever improved enough to save one. A save killed between its two renames leaves
   * the checkpoint whole under a temporary name (`best.old-4242`): that folder is the checkpoint.
   * @throws Error naming the folder looked for when the run has no checkpoint yet
   */
  findCheckpoint(which: CheckpointName = 'best'): string {
    const names: CheckpointName[] = which === 'best' ? ['best', 'last'] : ['last'];
    for (const name of names) {
      const dir = this.checkpointDir(name);
      if (existsSync(dir)) return dir;
      const saved = newestWholeSave(this.dir, name);
      if (saved) return saved;
    }
    throw new Error(`${this.dir} has no checkpoint yet (looked for ${this.checkpointDir(which)})`);
  }

  /** The kept epoch checkpoints (`--keep-last`), oldest first. */
  epochCheckpoints(): EpochCheckpoint[] {
    return listEpochCheckpoints(this.dir);
  }

  /**
   * The mean of the last `n` epoch checkpoints' parameters (`frost export --average-last n`).
   * @throws Error naming the run folder and how many it keeps when it has fewer than `n`
   */
  async averageLast(n: number): Promise<{ checkpoint: LoadedCheckpoint; averaged: EpochCheckpoint[] }> {
    if (!(Number.isInteger(n) && n >= 1)) throw new RangeError(`--average-last must be a positive integer, got ${n}`);
    const kept = this.epochCheckpoints();
    if (kept.length < n) {
      const epochs = kept.length > 0 ? ` (epochs ${kept.map((k) => k.epoch).join(', ')})` : '';
      throw new Error(
        `${this.dir} keeps ${kept.length} epoch checkpoint${kept.length === 1 ? '' : 's'}${epochs}, fewer than --average-last ${n}; train more epochs or with a larger --keep-last`,
      );
    }
    const averaged = kept.slice(-n);
    const loaded = await Promise.all(averaged.map((c) => loadCheckpoint(c.dir)));
    return {
      checkpoint: averageCheckpoints(
        loaded,
        averaged.map((c) => c.dir),
      ),
      averaged,
    };
  }

  /** Loads and verifies a checkpoint's tensors (train/checkpoint.ts). */
  loadCheckpoint(dir: string): Promise<LoadedCheckpoint> {
    return loadCheckpoint(dir);
  }

  /**
   * Rebuilds the trained model from the config and a loaded checkpoint: frozen heads regenerate
   * their matrices from the seed exactly as in training, learnable parameters come from `checkpoint`.
   * The caller disposes `model.params`.
   * @throws Error naming `checkpointDir` when a tensor is missing or has the wrong shape
   */
  rebuildModel(sizes: ModelSizes, checkpoint: LoadedCheckpoint, checkpointDir: string): Seq2SeqModel {
    const { config } = this;
    // A joint subword vocabulary means one embedding matrix for both sides, whatever the caller's sizes say.
    const joint = config.vocab.joint ? { jointEmbedding: true } : {};
    const model = buildModel(config.arch, config.archConfig, { ...sizes, ...joint }, config.head, config.seed);
    try {
      checkOutputRows(checkpoint.state, outputRows(model.head, sizes.tgtVocab), sizes.tgtVocab, checkpointDir);
    } catch (err) {
      model.params.dispose();
      throw err;
    }
    return withCheckpoint(model, checkpoint, checkpointDir);
  }

  /**
   * A language-model run's model (task 'lm', models/archs/lstm-lm.ts) rebuilt from a loaded checkpoint, as
   * {@link rebuildModel} does for seq2seq runs. The caller disposes `model.params`.
   */
  rebuildLanguageModel(vocabSize: number, checkpoint: LoadedCheckpoint, checkpointDir: string): LanguageModel {
    const { config } = this;
    const model = buildLanguageModel(config.arch, config.archConfig, vocabSize, config.head, config.seed);
    return withCheckpoint(model, checkpoint, checkpointDir);
  }
}

/** `model` with the checkpoint's tensors; on a missing or misshapen one, its parameters are freed before the throw. */
function withCheckpoint<M extends Seq2SeqModel | LanguageModel>(
  model: M,
  checkpoint: LoadedCheckpoint,
  checkpointDir: string,
): M {
  try {
    restoreTensors(model, null, inferenceTensors(checkpoint.tensors), checkpointDir);
  } catch (err) {
    model.params.dispose();
    throw err;
  }
  return model;
}

export type RunFile = keyof typeof RUN_FILES;
export type { LoadedCheckpoint };

/** Path of one of a run folder's files, whether or not the run exists yet. */
export function runPath(runDir: string, file: RunFile): string {
  return join(runDir, RUN_FILES[file]);
}

/** One of the epoch checkpoints the trainer keeps for averaging. */
export interface EpochCheckpoint {
  /** Complete epochs trained when it was saved (1-based). */
  epoch: number;
  dir: string;
}

const EPOCH_DIR = /^epoch-(\d+)$/;

/** Where the checkpoint after `epoch` complete epochs is kept: `checkpoints/epoch-0003`. */
export function epochCheckpointDir(runDir: string, epoch: number): string {
  return join(runDir, RUN_FILES.checkpoints, `epoch-${String(epoch).padStart(4, '0')}`);
}

/** The run's epoch checkpoints, oldest first (none when the run keeps none). */
export function listEpochCheckpoints(runDir: string): EpochCheckpoint[] {
  const root = join(runDir, RUN_FILES.checkpoints);
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((name) => ({ name, m: EPOCH_DIR.exec(name) }))
    .filter((e) => e.m !== null)
    .map((e) => ({ epoch: Number(e.m![1]), dir: join(root, e.name) }))
    .sort((a, b) => a.epoch - b.epoch);
}

function checkpointDir(runDir: string, which: CheckpointName): string {
  return runPath(runDir, which);
}

/** The SHA-256 of a checkpoint's tensors.bin, from its manifest (verified when the checkpoint is loaded). */
export async function checkpointSha256(dir: string): Promise<string> {
  const path = join(dir, 'checkpoint.json');
  const manifest = JSON.parse(await readFile(path, 'utf8')) as { sha256?: unknown };
  if (typeof manifest.sha256 !== 'string') throw new Error(`${path}: not a frost checkpoint manifest (no sha256)`);
  return manifest.sha256;
}

/**
 * Reads `runDir/checkpoints/<which>/checkpoint.json`; null when that checkpoint does not exist.
 * @throws Error naming the manifest when it exists but cannot be read
 */
export async function readCheckpointInfo(runDir: string, which: CheckpointName): Promise<CheckpointInfo | null> {
  const dir = checkpointDir(runDir, which);
  const path = join(dir, 'checkpoint.json');
  if (!existsSync(path)) return null;
  let manifest: { sha256?: unknown; state?: Record<string, unknown> };
  try {
    manifest = JSON.parse(await readFile(path, 'utf8')) as typeof manifest;
  } catch (err) {
    throw new Error(`${path}: cannot read the checkpoint manifest (${(err as Error).message})`, { cause: err });
  }
  if (typeof manifest.sha256 !== 'string') throw new Error(`${path}: not a frost checkpoint manifest (no sha256)`);
  const state = manifest.state ?? {};
  return { which, dir, sha256: manifest.sha256, step: Number(state.step ?? 0), epoch: Number(state.epoch ?? 0), state };
}

/**
 * The checkpoint `frost export` exports by default: `best`, or `last` when no validation score
 * ever improved enough to save a best.
 * @throws Error naming the run when it has no checkpoint at all
 */
export async function exportedCheckpoint(runDir: string): Promise<CheckpointInfo> {
  const info = (await readCheckpointInfo(runDir, 'best')) ?? (await readCheckpointInfo(runDir, 'last'));
  if (!info) {
    throw new Error(
      `${runDir} has no checkpoint yet (looked for ${checkpointDir(runDir, 'best')} and ${checkpointDir(runDir, 'last')})`,
    );
  }
  return info;
}

export async function readVocab(path: string): Promise<Vocabulary> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read vocabulary ${path}: ${(err as Error).message}`, { cause: err });
  }
  const { tokens, frequencies } = json as { tokens: string[]; frequencies?: number[] };
  if (!Array.isArray(tokens)) throw new Error(`${path} is not a frost vocabulary (no 'tokens' list)`);
  return Vocabulary.fromJSON(tokens, frequencies);
}

/** Tokens by id and their training frequencies (reports correlate target-vector norms with them). */
export async function writeVocab(path: string, vocab: Vocabulary): Promise<void> {
  await writeFile(path, JSON.stringify({ tokens: vocab.toJSON(), frequencies: vocab.frequencies }));
}
