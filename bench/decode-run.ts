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
import { join } from 'node:path';
import { exportRun } from '../export/export-run.ts';
import type { Precision } from '../export/precision.ts';
import { importMarian } from '../train/import/marian.ts';
import { REPO_ROOT } from '../train/data/paths.ts';
import { RunFolder } from '../train/run-folder.ts';
import { SPECIAL_TOKENS, type BenchModel } from './decode-model.ts';

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
  // It imports marian_files.py beside it: no __pycache__ left in the tree.
  const env = { ...process.env, PYTHONDONTWRITEBYTECODE: '1' };
  const r = spawnSync(python, [script, dir, data, ...args], { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`${script} failed (${r.status ?? r.signal}): ${r.stderr || r.error?.message}`);
}

/** Imports the Marian folder `from` into the run folder `out` (which must not exist). */
export async function importMarianRun(from: string, out: string, data: string | null): Promise<string> {
  await importMarian({ from, out, ...(data ? { data: { dir: data, kind: 'multi30k' } } : {}) });
  return out;
}

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
  const specials = new Set<string>(SPECIAL_TOKENS);
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
