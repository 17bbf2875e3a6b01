import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RUN_FILES } from '../train/run-config.ts';

/**
 * What a report needs to know about a checkpoint without loading its tensors: which one `frost
 * export` picks, its SHA-256 (the key of every cached measurement) and where training was.
 */
export interface CheckpointInfo {
  which: 'best' | 'last';
  dir: string;
  /** SHA-256 of tensors.bin, from the manifest (train/checkpoint.ts verifies it on load). */
  sha256: string;
  step: number;
  epoch: number;
  /** The trainer's state saved with it (done, stopReason, bestBleu, elapsedMs, ...). */
  state: Record<string, unknown>;
}

/**
 * Reads `runDir/checkpoints/<which>/checkpoint.json`; null when that checkpoint does not exist.
 * @throws Error naming the manifest when it exists but cannot be read
 */
export async function readCheckpointInfo(runDir: string, which: 'best' | 'last'): Promise<CheckpointInfo | null> {
  const dir = join(runDir, which === 'best' ? RUN_FILES.best : RUN_FILES.last);
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
  if (!info) throw new Error(`${runDir} has no checkpoint yet (looked for ${join(runDir, RUN_FILES.best)} and ${join(runDir, RUN_FILES.last)})`);
  return info;
}
