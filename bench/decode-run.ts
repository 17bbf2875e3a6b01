/**
 * bench:decode's models from a run folder instead of from initialisation: a frost run (trained, or imported with
 * `frost import`), exported once per precision the way `frost export` exports it, with the run's checkpoint as the
 * parameters a peer on frost's weights (bench/peer/ctranslate2_decode.py) maps. `--marian DIR` imports a Hugging
 * Face Marian folder (an opus-mt model) first; `--opus-mt-shape` writes a random one of opus-mt-de-en's shape,
 * stored as Hugging Face publishes it (test/helpers/marian/tiny_marian.py), so that anyone can time frost against
 * CTranslate2 at the size users deploy without downloading the weights. Decoding cost does not depend on the
 * weights' values (the bench forces every output to one length), only on the shape.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SPECIALS } from '../core/vocab.ts';
import { exportRun } from '../export/export-run.ts';
import type { Precision } from '../export/precision.ts';
import { importMarian } from '../train/import/marian.ts';
import { REPO_ROOT } from '../train/data/paths.ts';
import { RunFolder } from '../train/run-folder.ts';
import type { BenchModel } from './decode-model.ts';

/** opus-mt-de-en's shape (Helsinki-NLP/opus-mt-de-en's config.json), as tiny_marian.py's arguments. */
export const OPUS_MT_DE_EN_SHAPE = {
  d: 512,
  layers: 6,
  heads: 8,
  ffn: 2048,
  'vocab-size': 58101,
  activation: 'swish',
} as const;

/** Writes a random Marian folder of opus-mt-de-en's shape to `dir` (SentencePiece models trained on `data`). */
export function writeOpusMtShape(dir: string, data: string, python: string): void {
  const args = Object.entries(OPUS_MT_DE_EN_SHAPE).flatMap(([k, v]) => [`--${k}`, String(v)]);
  const script = join(REPO_ROOT, 'test', 'helpers', 'marian', 'tiny_marian.py');
  const r = spawnSync(python, [script, dir, data, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${script} failed (${r.status ?? r.signal}): ${r.stderr || r.error?.message}`);
}

/** Imports the Marian folder `from` into the run folder `out` (which must not exist). */
export async function importMarianRun(from: string, out: string, data: string | null): Promise<string> {
  await importMarian({ from, out, ...(data ? { data: { dir: data, kind: 'multi30k' } } : {}) });
  return out;
}

/** What a run folder's config.json says of its model, read before anything is built. */
function runConfig(runDir: string): { arch: string; head: { name: string } } {
  const path = join(runDir, 'config.json');
  const config = JSON.parse(readFileSync(path, 'utf8')) as { arch?: unknown; head?: { name?: unknown } };
  if (typeof config.arch !== 'string' || typeof config.head?.name !== 'string')
    throw new Error(`${path}: not a frost run's config (no arch or head)`);
  return config as { arch: string; head: { name: string } };
}

/** The architecture of the run at `runDir`. */
export const runFolderArch = (runDir: string): string => runConfig(runDir).arch;

/** The output head of the run at `runDir`. */
export const runFolderHead = (runDir: string): string => runConfig(runDir).head.name;

/** A run model's shape in one line: layers, d, heads, feed-forward, vocabularies, activation. */
export function runShape(model: BenchModel): string {
  const c = model.archConfig;
  const src = model.card.source?.tokens.length;
  const tgt = model.card.target.tokens.length;
  return (
    `${model.card.arch} ${String(c.encoderLayers ?? '?')}+${String(c.decoderLayers ?? '?')} layers, d ${String(c.model ?? '?')}, ` +
    `${String(c.heads ?? '?')} heads, ff ${String(c.ff ?? '?')}, ${String(c.activation ?? '')}, ` +
    `vocab ${src === tgt ? `${tgt} (joint)` : `${src}/${tgt}`}, head ${model.card.head.name}`
  );
}

export interface RunModelOptions {
  precision: Precision;
  /** export/parity.ts's bar; a random model's large weights need more than a trained one's 1e-4. */
  parityTolerance?: number;
  /**
   * Validation sentences of the int8 exports' BLEU check, which guards a trained model's quality, not its speed.
   * @default 50
   */
  precisionSentences?: number;
}

/** Exports the run at `runDir` to `root/<precision>` and describes it as a bench model. */
export async function writeRunModel(root: string, runDir: string, opts: RunModelOptions): Promise<BenchModel> {
  const run = await RunFolder.open(runDir);
  const { card } = await exportRun(runDir, join(root, opts.precision), {
    precision: opts.precision,
    quiet: true,
    ...(opts.parityTolerance === undefined ? {} : { parityTolerance: opts.parityTolerance }),
    precisionSentences: opts.precisionSentences ?? 50,
  });
  const specials = new Set<string>([SPECIALS.pad.token, SPECIALS.unk.token, SPECIALS.bos.token, SPECIALS.eos.token]);
  const config = run.config as { archConfig?: Record<string, unknown> };
  if (!config.archConfig) throw new Error(`${runDir}: not a run of an architecture with an archConfig`);
  return {
    dir: join(root, opts.precision),
    card,
    archConfig: config.archConfig,
    sourceWords: (card.source?.tokens ?? []).filter((t) => !specials.has(t)),
    params: run.findCheckpoint('best'),
  };
}
