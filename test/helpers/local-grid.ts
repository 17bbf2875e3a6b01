/**
 * A cached `frost experiment` grid trained by the local executor (cached-fixture.ts), on a toy corpus written into
 * the fixture: the reference a test compares another executor's grid with. Built by the CLI in a child process, as
 * a user runs it; read-only (copy it before writing into it).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cachedFixture } from './cached-fixture.ts';
import { type ToyCorpusSize, writeToyData } from './toy-run.ts';

const run = promisify(execFile);
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** What the grid, its trainers and its report are made by besides the trees every fixture hashes. */
const GRID_SOURCES = ['experiments', 'report', 'clients/cli', 'bin'];

/** The grid folder of `frost experiment ...argv --data <toy corpus> --out <fixture>/grid`, trained here. */
export function cachedLocalGrid(spec: {
  name: string;
  corpus: ToyCorpusSize;
  argv: readonly string[];
}): Promise<string> {
  return cachedFixture({
    name: spec.name,
    settings: { corpus: spec.corpus, argv: spec.argv },
    helpers: ['local-grid.ts', 'toy-run.ts'],
    sources: GRID_SOURCES,
    async build(into) {
      const data = await writeToyData(join(into, 'toy'), spec.corpus);
      const argv = [join(REPO_ROOT, 'bin', 'frost.js'), ...spec.argv, '--data', data, '--out', join(into, 'grid')];
      await run(process.execPath, argv, { cwd: REPO_ROOT, timeout: 300_000 });
    },
  }).then((dir) => join(dir, 'grid'));
}
