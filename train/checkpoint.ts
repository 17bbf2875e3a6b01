import * as tf from '@tensorflow/tfjs-core';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ParamStore } from '../models/params.ts';
import { replaceDir, writeDurable } from './atomic-write.ts';

/** Anything with a parameter store: a seq2seq model or a language model. */
export interface HasParams {
  readonly params: ParamStore;
}
import type { Adam } from './optim/adam.ts';

/**
 * A checkpoint is a folder with `tensors.bin` (float32 little-endian, concatenated) and
 * `checkpoint.json` (names, shapes, offsets, a SHA-256 of the bin, and free-form trainer state).
 * Folders are written under a temporary name, fsynced and swapped in (train/atomic-write.ts), so an
 * interrupted save never replaces a good checkpoint with half of one, and a failed one (a full disk)
 * removes what it wrote and names the file that failed. A kill in the middle of the swap leaves the
 * checkpoint under a temporary name, where a resume finds it (train/resume-checkpoint.ts).
 */
export interface CheckpointTensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

interface Manifest {
  format: 'frost-checkpoint';
  version: 1;
  sha256: string;
  bytes: number;
  tensors: { name: string; shape: number[]; offset: number; length: number }[];
  state: Record<string, unknown>;
}

export async function saveCheckpoint(
  dir: string,
  tensors: CheckpointTensor[],
  state: Record<string, unknown>,
): Promise<void> {
  const total = tensors.reduce((n, t) => n + t.data.length, 0);
  const bin = new Float32Array(total);
  const entries: Manifest['tensors'] = [];
  let offset = 0;
  for (const t of tensors) {
    bin.set(t.data, offset);
    entries.push({ name: t.name, shape: t.shape, offset, length: t.data.length });
    offset += t.data.length;
  }
  const bytes = Buffer.from(bin.buffer, bin.byteOffset, bin.byteLength);
  const manifest: Manifest = {
    format: 'frost-checkpoint',
    version: 1,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    bytes: bytes.length,
    tensors: entries,
    state,
  };
  await replaceDir(dir, async (tmp) => {
    await writeDurable(join(tmp, 'tensors.bin'), bytes);
    await writeDurable(join(tmp, 'checkpoint.json'), JSON.stringify(manifest, null, 1));
  });
}

export interface LoadedCheckpoint {
  tensors: Map<string, { shape: number[]; data: Float32Array }>;
  state: Record<string, unknown>;
}

/** Loads and verifies a checkpoint; anything wrong is refused with the path in the message. */
export async function loadCheckpoint(dir: string): Promise<LoadedCheckpoint> {
  const manifestPath = join(dir, 'checkpoint.json');
  const binPath = join(dir, 'tensors.bin');
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Manifest;
  } catch (err) {
    throw new Error(`corrupt or missing checkpoint manifest ${manifestPath}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (manifest.format !== 'frost-checkpoint' || !Array.isArray(manifest.tensors)) {
    throw new Error(`${manifestPath} is not a frost checkpoint manifest`);
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(binPath);
  } catch (err) {
    throw new Error(`missing checkpoint tensors ${binPath}: ${(err as Error).message}`, { cause: err });
  }
  if (bytes.length !== manifest.bytes) {
    throw new Error(`corrupt checkpoint ${binPath}: ${bytes.length} bytes, manifest says ${manifest.bytes}`);
  }
  if (createHash('sha256').update(bytes).digest('hex') !== manifest.sha256) {
    throw new Error(`corrupt checkpoint ${binPath}: SHA-256 does not match ${manifestPath}`);
  }
  const all = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const t of manifest.tensors)
    tensors.set(t.name, { shape: t.shape, data: all.subarray(t.offset, t.offset + t.length) });
  return { tensors, state: manifest.state };
}

/** The model's learnable parameters and the optimiser's moments, as checkpoint tensors. */
export function collectTensors(model: HasParams, optimizer: Adam): CheckpointTensor[] {
  const out: CheckpointTensor[] = [];
  for (const [name, v] of model.params.learnable) {
    out.push({ name, shape: [...v.shape], data: v.dataSync() as Float32Array });
    out.push({ name: `adam.m/${name}`, shape: [...v.shape], data: optimizer.m.get(name)!.dataSync() as Float32Array });
    out.push({ name: `adam.v/${name}`, shape: [...v.shape], data: optimizer.v.get(name)!.dataSync() as Float32Array });
  }
  return out;
}

/** The model's learnable parameters alone (epoch checkpoints, kept for averaging: a third of a full one). */
export function collectParams(model: HasParams): CheckpointTensor[] {
  return variableTensors(model.params.learnable);
}

/** Variables as checkpoint tensors, each named `prefix` + its name. */
export function variableTensors(vars: ReadonlyMap<string, tf.Variable>, prefix = ''): CheckpointTensor[] {
  return [...vars].map(([name, v]) => ({
    name: prefix + name,
    shape: [...v.shape],
    data: v.dataSync() as Float32Array,
  }));
}

/**
 * The element-wise mean of the checkpoints' tensors (fairseq's average_checkpoints.py), in float64
 * and rounded once. Only the model's parameters are averaged (Adam's moments are left out); every
 * checkpoint must hold the same tensors with the same shapes.
 * @param where names each checkpoint (its folder) for errors
 */
export function averageCheckpoints(checkpoints: LoadedCheckpoint[], where: string[]): LoadedCheckpoint {
  if (checkpoints.length === 0) throw new Error('averageCheckpoints: no checkpoints');
  const first = checkpoints[0]!;
  const names = [...first.tensors.keys()].filter((n) => !n.startsWith('adam.'));
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const name of names) {
    const { shape, data } = first.tensors.get(name)!;
    const sum = new Float64Array(data.length);
    checkpoints.forEach((c, k) => {
      const t = c.tensors.get(name);
      if (!t) throw new Error(`checkpoint in ${where[k]} has no tensor '${name}' (it is in ${where[0]})`);
      if (t.shape.join() !== shape.join())
        throw new Error(`checkpoint in ${where[k]}: '${name}' has shape [${t.shape}], ${where[0]} has [${shape}]`);
      for (let i = 0; i < sum.length; i++) sum[i] += t.data[i];
    });
    tensors.set(name, { shape, data: Float32Array.from(sum, (x) => x / checkpoints.length) });
  }
  return { tensors, state: checkpoints[checkpoints.length - 1]!.state };
}

/** Loads learnable parameters (and Adam moments, if given) from checkpoint tensors, checking every shape. */
export function restoreTensors(
  model: HasParams,
  optimizer: Adam | null,
  tensors: Map<string, { shape: number[]; data: Float32Array }>,
  where: string,
): void {
  const put = (target: tf.Variable, name: string) => restoreVariable(target, tensors, name, where);
  for (const [name, v] of model.params.learnable) {
    put(v, name);
    if (optimizer) {
      put(optimizer.m.get(name)!, `adam.m/${name}`);
      put(optimizer.v.get(name)!, `adam.v/${name}`);
    }
  }
}

/**
 * Loads checkpoint tensor `name` into `target`.
 * @throws Error naming `where` when the tensor is missing or its shape is not the target's
 */
export function restoreVariable(
  target: tf.Variable,
  tensors: ReadonlyMap<string, { shape: number[]; data: Float32Array }>,
  name: string,
  where: string,
): void {
  const t = tensors.get(name);
  if (!t) throw new Error(`checkpoint in ${where} has no tensor '${name}'`);
  if (t.shape.join() !== target.shape.join())
    throw new Error(`checkpoint in ${where}: '${name}' has shape [${t.shape}], the model expects [${target.shape}]`);
  target.assign(tf.tensor(t.data, target.shape, 'float32'));
}
