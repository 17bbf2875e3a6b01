/**
 * A LayersModel on disk: `model.json` plus its weight shards (Node only).
 *
 * `writeModelFiles` is the save side, for `tf.io.withSaveHandler`: tfjs
 * saves to `file://` only with tfjs-node, which frost does not depend on.
 *   await model.save(tf.io.withSaveHandler((a) => writeModelFiles(dir, a)));
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { LayersModelArtifacts, ModelJson, WeightSpec } from './model-json.ts';

/** The parts of tfjs' ModelArtifacts that a LayersModel save hands over (structurally typed, so no tfjs import). */
export interface SavedArtifacts {
  modelTopology?: unknown;
  weightSpecs?: WeightSpec[] | unknown[];
  /** ArrayBuffer, or a list of them (tfjs ≥ 4.x may split large weights). */
  weightData?: ArrayBuffer | ArrayBuffer[] | unknown;
  format?: string;
  generatedBy?: string;
  convertedBy?: string | null;
  trainingConfig?: unknown;
  userDefinedMetadata?: unknown;
}

/** What a tfjs save handler must resolve to. */
export interface SaveResult {
  modelArtifactsInfo: {
    dateSaved: Date;
    modelTopologyType: 'JSON';
    modelTopologyBytes?: number;
    weightSpecsBytes?: number;
    weightDataBytes?: number;
  };
}

/** Name of the single weight shard writeModelFiles writes. */
const WEIGHTS_FILE = 'weights.bin';

function concatBuffers(data: unknown): Uint8Array {
  const parts = Array.isArray(data) ? data : data === undefined ? [] : [data];
  const arrays = parts.map((p) => {
    if (p instanceof ArrayBuffer) return new Uint8Array(p);
    if (ArrayBuffer.isView(p)) return new Uint8Array(p.buffer, p.byteOffset, p.byteLength);
    throw new Error('weightData is not an ArrayBuffer');
  });
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.byteLength, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.byteLength;
  }
  return out;
}

/**
 * Writes `model.json` and `weights.bin` into `dir` (created if needed), in
 * the format `tf.loadLayersModel` and `frost convert` read. Returns the save
 * result tfjs expects from a save handler.
 */
export async function writeModelFiles(dir: string, artifacts: SavedArtifacts): Promise<SaveResult> {
  if (artifacts.modelTopology === undefined) throw new Error('writeModelFiles: the artifacts have no modelTopology');
  const weights = concatBuffers(artifacts.weightData);
  const json: ModelJson & Record<string, unknown> = {
    format: artifacts.format ?? 'layers-model',
    generatedBy: artifacts.generatedBy,
    convertedBy: artifacts.convertedBy ?? null,
    modelTopology: artifacts.modelTopology,
    weightsManifest: [{ paths: [`./${WEIGHTS_FILE}`], weights: (artifacts.weightSpecs ?? []) as WeightSpec[] }],
    ...(artifacts.trainingConfig === undefined ? {} : { trainingConfig: artifacts.trainingConfig }),
    ...(artifacts.userDefinedMetadata === undefined ? {} : { userDefinedMetadata: artifacts.userDefinedMetadata }),
  };
  await mkdir(dir, { recursive: true });
  const text = JSON.stringify(json);
  await writeFile(join(dir, 'model.json'), text);
  await writeFile(join(dir, WEIGHTS_FILE), weights);
  return {
    modelArtifactsInfo: {
      dateSaved: new Date(),
      modelTopologyType: 'JSON',
      modelTopologyBytes: text.length,
      weightDataBytes: weights.byteLength,
    },
  };
}

/**
 * Reads a `model.json` and its weight shards (paths relative to the json file, groups and shards in manifest order).
 */
export async function readModelFiles(modelJsonPath: string): Promise<LayersModelArtifacts> {
  const path = resolve(modelJsonPath);
  let json: ModelJson;
  try {
    json = JSON.parse(await readFile(path, 'utf8')) as ModelJson;
  } catch (err) {
    throw new Error(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  if (json.modelTopology === undefined) {
    throw new Error(`${path} has no modelTopology (a graph model from tf.saved_model conversion is not a LayersModel)`);
  }
  const manifest = json.weightsManifest ?? [];
  const shards: Uint8Array[] = [];
  for (const group of manifest) {
    for (const p of group.paths) shards.push(new Uint8Array(await readFile(join(dirname(path), p))));
  }
  return {
    modelTopology: json.modelTopology,
    weightSpecs: manifest.flatMap((group) => group.weights),
    weightData: concatBuffers(shards),
  };
}
