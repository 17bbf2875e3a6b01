/**
 * One trained and exported toy caption model, shared by the tests that only need *a* real caption
 * model (the CLI, the browser page) rather than to test training itself.
 *
 * Training takes tens of seconds on a loaded machine, so the export is cached on disk, outside the
 * repository, under a key that hashes the run config and every source file that shapes the model
 * (core/, models/, train/, export/): an edit to any of them trains a fresh model, so a test never
 * runs against an export older than the code. Test files run in parallel processes, so the first
 * one to get there builds while the others wait on a lock directory; a lock whose owner has died is
 * taken over. Delete the cache folder (see {@link TOY_CAPTION_CACHE_DIR}) to force a rebuild.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportRun } from '../../export/export-run.ts';
import { initBackend } from '../../train/backend/select.ts';
import { imagesOf, loadCaptionDataset, type CaptionImage } from '../../train/data/captions.ts';
import { train } from '../../train/trainer.ts';
import { toyCaptionConfig, writeToyCaptions } from './toy-caption-run.ts';

/** Where cached toy models live; FROST_TEST_CACHE overrides it. */
export const TOY_CAPTION_CACHE_DIR = process.env.FROST_TEST_CACHE ?? join(tmpdir(), 'frost-test-cache');

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The sources a trained and exported model depends on. */
const MODEL_SOURCES = ['core', 'models', 'train', 'export'];
/** The settings caption-model-e2e.test.ts shows reach BLEU-4 ≥ 0.45, so captions depend on the image. */
const TRAINING = { arch: 'show-tell', epochs: 14, learningRate: 3e-3 } as const;
/** The name in the model's card, hence on a server. */
export const TOY_CAPTION_MODEL_NAME = 'toy-caption';
/** How long a test waits for another process to finish building before failing. */
const WAIT_MS = 15 * 60_000;

/** A cached toy caption model and the data set it was trained on. */
export interface ToyCaptionModel {
  /** The exported model (model-card.json, encoder.onnx, decoder.onnx). Read-only: it is shared. */
  modelDir: string;
  /** The toy data set (Karpathy layout, 64² PNGs). */
  dataDir: string;
  /** The held-out images, with their references. */
  testImages: CaptionImage[];
}

/** Returns the cached model, training and exporting it first when no cache matches the current sources. */
export async function toyCaptionModel(): Promise<ToyCaptionModel> {
  const key = await cacheKey();
  const dir = join(TOY_CAPTION_CACHE_DIR, `toy-caption-${key}`);
  const lock = `${dir}.lock`;
  await mkdir(TOY_CAPTION_CACHE_DIR, { recursive: true });
  const deadline = Date.now() + WAIT_MS;
  while (!existsSync(dir)) {
    if (await tryLock(lock)) {
      try {
        if (!existsSync(dir)) {
          await build(dir);
          await pruneStale(dir);
        }
      } finally {
        await rm(lock, { recursive: true, force: true });
      }
      break;
    }
    if (Date.now() > deadline)
      throw new Error(`gave up waiting for ${lock} (held by another test process) after ${WAIT_MS / 60_000} minutes`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const dataDir = join(dir, 'toy');
  return { modelDir: join(dir, 'model'), dataDir, testImages: imagesOf(await loadCaptionDataset(dataDir), ['test']) };
}

/** Trains and exports into a scratch folder, then renames it into place, so `dir` only ever holds a finished build. */
async function build(dir: string): Promise<void> {
  const scratch = `${dir}.building-${process.pid}`;
  await rm(scratch, { recursive: true, force: true });
  try {
    await initBackend({ prefer: 'wasm', quiet: true });
    const { dataDir } = await writeToyCaptions(scratch);
    const config = toyCaptionConfig(scratch, dataDir, TRAINING.arch, {
      optim: { learningRate: TRAINING.learningRate },
      epochs: TRAINING.epochs,
    });
    const runDir = join(scratch, 'run');
    const result = await train(config, runDir, { quiet: true });
    result.model.params.dispose();
    await exportRun(runDir, join(scratch, 'model'), { name: TOY_CAPTION_MODEL_NAME, quiet: true });
    // The run's checkpoints and image cache are not needed once exported; keep the cache small.
    await rm(runDir, { recursive: true, force: true });
    await rm(join(scratch, 'cache'), { recursive: true, force: true });
    await rename(scratch, dir);
  } catch (err) {
    await rm(scratch, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Deletes builds for older sources (each edit of the sources leaves one behind), only those an hour
 * old or more since a test still reading one started well within that; and scratch folders of
 * builds whose process died.
 */
async function pruneStale(keep: string): Promise<void> {
  const cutoff = Date.now() - 60 * 60_000;
  for (const entry of await readdir(TOY_CAPTION_CACHE_DIR, { withFileTypes: true })) {
    const path = join(TOY_CAPTION_CACHE_DIR, entry.name);
    if (!entry.isDirectory() || path === keep) continue;
    const scratchOf = /^toy-caption-[0-9a-f]{16}\.building-(\d+)$/.exec(entry.name);
    const stale = scratchOf
      ? !isAlive(Number(scratchOf[1]))
      : /^toy-caption-[0-9a-f]{16}$/.test(entry.name) && (await stat(path)).mtimeMs < cutoff;
    if (stale) await rm(path, { recursive: true, force: true });
  }
}

/**
 * Takes the lock directory, or reports that a live process holds it. A lock left by a process that
 * died (killed test run) is removed and taken.
 */
async function tryLock(lock: string): Promise<boolean> {
  try {
    await mkdir(lock);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const owner = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => ''));
    // No pid yet means the owner is between mkdir and writeFile: alive, so wait.
    if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) return false;
    await rm(lock, { recursive: true, force: true });
    return tryLock(lock);
  }
  await writeFile(join(lock, 'pid'), String(process.pid));
  return true;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0); // signal 0 only checks that the process exists
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** SHA-256 (first 16 hex digits) of the training settings and of every source file the model depends on. */
async function cacheKey(): Promise<string> {
  const hash = createHash('sha256').update(JSON.stringify(TRAINING));
  for (const top of MODEL_SOURCES) {
    for (const file of await sourceFiles(join(REPO_ROOT, top))) {
      hash
        .update(relative(REPO_ROOT, file))
        .update('\0')
        .update(await readFile(file))
        .update('\0');
    }
  }
  // This helper and the config helper it uses decide the run too.
  for (const helper of ['toy-caption-run.ts', 'toy-caption-model.ts'])
    hash.update(await readFile(join(REPO_ROOT, 'test', 'helpers', helper)));
  return hash.digest('hex').slice(0, 16);
}

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && /\.(ts|js|json)$/.test(e.name))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}
