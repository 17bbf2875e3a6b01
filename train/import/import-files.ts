/**
 * What every importer (marian.ts, fairseq.ts) does with the stranger's files it reads and the run folder it writes:
 * one-line refusals, JSON parsed against a schema, the safetensors file checked before a tensor is decoded, each
 * source file's hash for the card, and the run folder written whole under a temporary name, then renamed into place
 * (train/atomic-write.ts), so a refused or interrupted import leaves nothing behind.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { readSafetensors, type SafetensorsFile } from '../../core/safetensors/node-file.ts';
import type { Vocabulary } from '../../core/vocab.ts';
import { describeIssues } from '../../core/zod-issues.ts';
import { replaceDir, writeDurable } from '../atomic-write.ts';
import { saveCheckpoint, type CheckpointTensor } from '../checkpoint.ts';
import { RUN_FILES, type ImportedProvenance, type TranslationRunConfig } from '../run-config.ts';

/** A folder frost will not import, and why, in one line. */
export class ImportRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportRefused';
  }
}

export function refuse(message: string): never {
  throw new ImportRefused(message);
}

/** A size in a stranger's config: a whole number above 0. */
export const size = () => z.number().int().positive();

export const shapeText = (shape: readonly number[]) => `[${shape.join(', ')}]`;

export async function readJsonFile(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    refuse(`${path}: not valid JSON (${(err as Error).message})`);
  }
}

export function parseWith<T>(schema: z.ZodType<T>, json: unknown, where: string): T {
  const parsed = schema.safeParse(json);
  if (!parsed.success) refuse(`${where}: ${describeIssues(parsed.error.issues, { max: 3 })}`);
  return parsed.data;
}

/** The file's header and ranges checked (core/safetensors); a file that fails is refused in its one line. */
export async function readCheckedSafetensors(path: string): Promise<SafetensorsFile> {
  try {
    return await readSafetensors(path);
  } catch (err) {
    refuse((err as Error).message);
  }
}

/**
 * Refuses a file without a tensor `expected` names, or with one in another shape (`also`: a second layout accepted);
 * `config` (`config.json`) is the file whose fields each `from` names.
 */
export function checkImplied(
  file: SafetensorsFile,
  expected: ReadonlyMap<string, { shape: number[]; from: string; also?: number[] }>,
  config: string,
): void {
  for (const [name, { shape, from, also }] of expected) {
    const entry = file.entries.get(name);
    if (entry === undefined)
      refuse(`${file.path}: no tensor '${name}' (${config}'s ${from} imply ${shapeText(shape)})`);
    if (shapeText(entry.shape) !== shapeText(shape) && !(also && shapeText(entry.shape) === shapeText(also)))
      refuse(`${file.path}: '${name}' is ${shapeText(entry.shape)}, but ${config}'s ${from} imply ${shapeText(shape)}`);
  }
}

/** The file's tensors decoded, by name, but those `skipped` says are not read; one holding a NaN or ±∞ is refused. */
export function decodeFinite(file: SafetensorsFile, skipped = (_name: string) => false): Map<string, Float32Array> {
  const tensors = new Map<string, Float32Array>();
  for (const name of file.entries.keys()) {
    if (skipped(name)) continue;
    const { data } = file.tensor(name);
    const bad = data.findIndex((x) => !Number.isFinite(x));
    if (bad >= 0) refuse(`${file.path}: '${name}' holds ${data[bad]} at element ${bad}`);
    tensors.set(name, data);
  }
  return tensors;
}

/**
 * A source file as the card records it. model.safetensors comes from the read that checked it (its `sha256`): an
 * opus-mt one is hundreds of megabytes.
 */
export async function fileHash(path: string): Promise<ImportedProvenance['files'][string]> {
  const bytes = await readFile(path);
  return { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length };
}

/** A checked import, ready to be written as a run folder. */
export interface ImportedRun {
  config: TranslationRunConfig;
  srcVocab: Vocabulary;
  tgtVocab: Vocabulary;
  checkpoint: CheckpointTensor[];
  /** Files copied into the run (tokenizer models, BPE codes), by their names there. */
  files: Readonly<Record<string, Uint8Array>>;
}

/** Writes the run folder `out` whole, atomically; its one checkpoint is `best`, marked done. Returns its parameters. */
export async function writeImportedRun(out: string, run: ImportedRun): Promise<number> {
  const state = {
    step: 0,
    epoch: 0,
    done: true,
    stopKind: 'imported',
    stopReason: 'imported',
    imported: run.config.imported?.format,
  };
  const vocabJson = (v: Vocabulary) => JSON.stringify({ tokens: v.toJSON(), frequencies: v.frequencies });
  await replaceDir(out, async (tmp) => {
    for (const [name, bytes] of Object.entries(run.files)) await writeDurable(join(tmp, name), bytes);
    await writeDurable(join(tmp, RUN_FILES.srcVocab), vocabJson(run.srcVocab));
    await writeDurable(join(tmp, RUN_FILES.tgtVocab), vocabJson(run.tgtVocab));
    await writeDurable(join(tmp, RUN_FILES.config), `${JSON.stringify(run.config, null, 2)}\n`);
    await saveCheckpoint(join(tmp, RUN_FILES.best), run.checkpoint, state);
  });
  return run.checkpoint.reduce((n, t) => n + t.data.length, 0);
}
