/**
 * A cached `frost experiment mt-heads` on the toy corpus (cached-fixture.ts): the grid's time budget
 * makes every build cost its minutes of training, which the tests that read its runs, exports and
 * report need not pay again. It is built by the CLI in a child process, as a user runs it, and keeps
 * what that printed on stdout. The folder is shared: copy it (copyFixture) before training, reporting
 * or rerunning the grid in it.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cachedFixture } from './cached-fixture.ts';

const run = promisify(execFile);
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const STDOUT_FILE = 'experiment-stdout.txt';
/** What the experiment's grid, exports and report are made by besides the trees every fixture hashes. */
const GRID_SOURCES = ['experiments', 'report', 'clients/cli', 'bin'];

export interface MtHeadsSpec {
  heads: readonly string[];
  budgetMinutes: number;
  preset: string;
}

/** The experiment's `--out` folder (read-only) and what the command printed on stdout. */
export async function cachedMtHeadsExperiment(spec: MtHeadsSpec): Promise<{ out: string; stdout: string }> {
  const out = await cachedFixture({
    name: 'mt-heads-experiment',
    settings: spec,
    helpers: ['mt-heads-experiment.ts'],
    sources: GRID_SOURCES,
    async build(into) {
      const argv = [
        join(REPO_ROOT, 'bin', 'frost.js'),
        ...['experiment', 'mt-heads', '--data', 'toy', '--heads', spec.heads.join(',')],
        ...['--budget-minutes', String(spec.budgetMinutes), '--preset', spec.preset, '--out', into],
      ];
      const { stdout } = await run(process.execPath, argv, { cwd: REPO_ROOT, timeout: 240_000 });
      await refuseSilentRuns(into);
      await writeFile(join(into, STDOUT_FILE), stdout);
    },
  });
  return { out, stdout: await readFile(join(out, STDOUT_FILE), 'utf8') };
}

/**
 * A time budget buys few updates on a machine busy with other work, and a model that says nothing yet
 * would then fail every later run's tests until the code changed: such a build is not kept.
 */
async function refuseSilentRuns(out: string): Promise<void> {
  const report = JSON.parse(await readFile(join(out, 'report', 'report.json'), 'utf8')) as {
    runs: { id: string; training: { steps: number }; test: { words: number } }[];
  };
  const silent = report.runs.filter((r) => !(r.test.words > 0));
  if (silent.length > 0)
    throw new Error(
      `the experiment's runs ${silent.map((r) => `${r.id} (${r.training.steps} updates)`).join(', ')} translate every test sentence to nothing: the machine was too busy for the budget; not cached`,
    );
}
