/**
 * A hash of source trees outside the ones cached-fixture.ts hashes itself (core/, models/, train/,
 * export/), for a fixture built by more of the code (the CLI, an experiment's grid and report): put it
 * in the fixture's `settings`, so an edit to those trees builds it again. FixtureSpec's `sources` does
 * the same through the fixture's key, where older builds are pruned (settings name a new folder).
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** SHA-256 (first 16 hex digits) of every .ts, .js and .json file under `dirs` (relative to the repository). */
export async function sourceTreesHash(dirs: readonly string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const dir of dirs) {
    const entries = await readdir(join(REPO_ROOT, dir), { withFileTypes: true, recursive: true });
    const files = entries
      .filter((e) => e.isFile() && /\.(ts|js|json)$/.test(e.name))
      .map((e) => join(e.parentPath, e.name))
      .sort();
    for (const file of files)
      hash
        .update(relative(REPO_ROOT, file))
        .update('\0')
        .update(await readFile(file))
        .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}
