/**
 * Trained fixtures shared by test files and by successive test runs: a folder built once per content
 * hash of everything that shapes it, kept outside the repository.
 *
 * Training even a toy model takes seconds to tens of seconds, and most tests only need *a* real
 * trained model (to export, serve, decode or break), not to watch one train. A fixture's key hashes
 * its settings, every source file under core/, models/, train/ and export/, and the test helpers
 * that build it: an edit to any of them builds a fresh one, so a test never runs against a model
 * older than the code. Test files run in parallel processes, so the first one to get there builds
 * while the others wait on a lock directory; a lock whose owner has died is taken over. A build is
 * made in its final folder (run configs record absolute data paths, so it cannot be moved after) and
 * counts only once its marker file is written last: a build cut short is removed and made again.
 * Delete {@link FIXTURE_CACHE_DIR} to force rebuilds.
 *
 * Fixture folders are shared and read-only: a test that writes into a run (resumes it, breaks a
 * checkpoint) copies it first with {@link copyFixture}.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where cached fixtures live; FROST_TEST_CACHE overrides it. */
export const FIXTURE_CACHE_DIR = process.env.FROST_TEST_CACHE ?? join(tmpdir(), 'frost-test-cache');

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The sources a trained and exported model depends on. */
const MODEL_SOURCES = ['core', 'models', 'train', 'export'];
/** How long a test waits for another process to finish building before failing. */
const WAIT_MS = 15 * 60_000;
/** Written last into a finished build. */
const COMPLETE = '.fixture-complete';
/** Builds for older sources are deleted once this old: a test still reading one started well within it. */
const STALE_MS = 60 * 60_000;

export interface FixtureSpec {
  /** The fixture's name: lower-case letters, digits and dashes (the folder is `NAME-KEY`). */
  name: string;
  /** Everything besides the sources that decides what is built (JSON-serialisable). */
  settings: unknown;
  /** The test helpers (file names under test/helpers/) whose code decides what is built. */
  helpers: readonly string[];
  /**
   * Source folders (relative to the repository) that decide what is built besides core/, models/, train/ and
   * export/, which every fixture's key hashes: a fixture made by the CLI, an experiment or a report.
   */
  sources?: readonly string[];
  /** Fills `dir`, an empty folder that becomes the fixture once this resolves. */
  build(dir: string): Promise<void>;
}

const building = new Map<string, Promise<string>>();

/** The fixture's folder, built first when no cached build matches the current sources and settings. */
export function cachedFixture(spec: FixtureSpec): Promise<string> {
  if (!/^[a-z0-9-]+$/.test(spec.name)) throw new Error(`fixture name ${JSON.stringify(spec.name)} is not [a-z0-9-]+`);
  // Tests of one file that ask for the same fixture at once share one wait.
  const id = `${spec.name}\0${JSON.stringify(spec.settings)}`;
  let pending = building.get(id);
  if (!pending) {
    pending = obtain(spec);
    building.set(id, pending);
    pending.catch(() => building.delete(id));
  }
  return pending;
}

/** Copies a fixture (or a folder inside one) to `dest`, for a test that writes into it. */
export async function copyFixture(from: string, dest: string): Promise<string> {
  await cp(from, dest, { recursive: true });
  return dest;
}

async function obtain(spec: FixtureSpec): Promise<string> {
  // Settings get their own part of the name, so that builds of one name with other settings are never
  // taken for stale builds of this one.
  const prefix = `${spec.name}-${settingsKey(spec)}`;
  const dir = join(FIXTURE_CACHE_DIR, `${prefix}-${await cacheKey(spec)}`);
  const lock = `${dir}.lock`;
  await mkdir(FIXTURE_CACHE_DIR, { recursive: true });
  const deadline = Date.now() + WAIT_MS;
  const done = join(dir, COMPLETE);
  while (!existsSync(done)) {
    if (await tryLock(lock)) {
      try {
        if (!existsSync(done)) {
          await build(spec, dir);
          await pruneStale(prefix, dir);
        }
      } finally {
        await rm(lock, { recursive: true, force: true });
      }
      break;
    }
    if (Date.now() > deadline)
      throw new Error(`gave up waiting for ${lock} (held by another test process) after ${WAIT_MS / 60_000} minutes`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return dir;
}

async function build(spec: FixtureSpec, dir: string): Promise<void> {
  // Whatever is here was left by a build that died before its marker.
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  try {
    await spec.build(dir);
    await writeFile(join(dir, COMPLETE), `${new Date().toISOString()}\n`);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Deletes this fixture's builds for older sources (each edit of the sources leaves one behind) once
 * they are {@link STALE_MS} old, unless another process is building it now.
 */
async function pruneStale(prefix: string, keep: string): Promise<void> {
  const cutoff = Date.now() - STALE_MS;
  const built = new RegExp(`^${prefix}-[0-9a-f]{16}$`);
  for (const entry of await readdir(FIXTURE_CACHE_DIR, { withFileTypes: true })) {
    const path = join(FIXTURE_CACHE_DIR, entry.name);
    if (!entry.isDirectory() || path === keep || !built.test(entry.name) || existsSync(`${path}.lock`)) continue;
    if ((await stat(path)).mtimeMs < cutoff) await rm(path, { recursive: true, force: true });
  }
}

/** Takes the lock directory, or reports that a live process holds it; a dead owner's lock is taken over. */
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

/** Hashes of the source trees, computed once per process (every fixture of a test file hashes the same files). */
let sourcesHash: Promise<string> | undefined;

/** SHA-256 (first 8 hex digits) of the fixture's settings. */
function settingsKey(spec: FixtureSpec): string {
  return createHash('sha256')
    .update(JSON.stringify(spec.settings) ?? '')
    .digest('hex')
    .slice(0, 8);
}

/** SHA-256 (first 16 hex digits) of the settings, the model sources and the helpers that build the fixture. */
async function cacheKey(spec: FixtureSpec): Promise<string> {
  sourcesHash ??= treesHash(MODEL_SOURCES);
  const hash = createHash('sha256')
    .update(spec.name)
    .update('\0')
    .update(JSON.stringify(spec.settings) ?? '')
    .update('\0')
    .update(await sourcesHash);
  for (const helper of ['cached-fixture.ts', ...spec.helpers])
    hash
      .update(helper)
      .update('\0')
      .update(await readFile(join(REPO_ROOT, 'test', 'helpers', helper)));
  if (spec.sources) hash.update(await treesHash(spec.sources));
  return hash.digest('hex').slice(0, 16);
}

/** SHA-256 of every .ts, .js and .json file under `tops` (folders relative to the repository), names and bytes. */
async function treesHash(tops: readonly string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const top of tops) {
    for (const file of await sourceFiles(join(REPO_ROOT, top))) {
      hash
        .update(relative(REPO_ROOT, file))
        .update('\0')
        .update(await readFile(file))
        .update('\0');
    }
  }
  return hash.digest('hex');
}

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && /\.(ts|js|json)$/.test(e.name))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}
