/**
 * Cached runs of `frost train ARGS` on a toy corpus, made by the CLI's own command in this process
 * (frost-in-process.ts): the same flag parsing, config and trainer as bin/frost.js, without a child's
 * start-up, and once per change of the code rather than once per test. For tests that compare their
 * own `frost train` children with a run left alone, or that resume or export a run the CLI made.
 * The folders are shared and read-only: copy them (copyFixture) before writing into them.
 */
import { join } from 'node:path';
import { cachedFixture } from './cached-fixture.ts';
import { frostInProcess } from './frost-in-process.ts';
import { type ToyCorpusSize, writeToyData } from './toy-run.ts';

/** Stand-ins for the fixture's own folders in `args`, so the cache key does not depend on where it lives. */
export const DATA_DIR = '<data>';
export const RUN_DIR = '<run>';

const COMPUTE_ENV = ['FROST_WASM_THREADS', 'FROST_NATIVE_GEMM', 'FROST_NATIVE_GEMM_THREADS', 'OMP_NUM_THREADS'];

/**
 * `frost ...args` (`train ...`, as tinyTrainArgs in frost-cli.ts gives them; DATA_DIR and RUN_DIR replaced by
 * the fixture's toy corpus and run folder) on a toy corpus of `corpus`'s size, as it ended: its corpus
 * (`dataDir`) and run (`runDir`).
 * @param name the fixture's name, [a-z0-9-]+
 */
export async function cachedCliTrainRun(
  name: string,
  corpus: ToyCorpusSize,
  args: readonly string[],
): Promise<{ dataDir: string; runDir: string }> {
  if (args[0] !== 'train') throw new Error(`not a frost train command: ${args.join(' ')}`);
  const dir = await cachedFixture({
    name: `cli-train-${name}`,
    // With the variables that decide how the trainer computes: a test comparing its own `frost train`
    // children with this run gives them this process's environment.
    settings: { corpus, args, env: Object.fromEntries(COMPUTE_ENV.map((k) => [k, process.env[k] ?? null])) },
    helpers: ['cli-train-fixtures.ts', 'frost-in-process.ts', 'toy-run.ts'],
    // The command's flags and defaults.
    sources: ['clients/cli'],
    async build(into) {
      const dataDir = await writeToyData(join(into, 'toy'), corpus);
      const runDir = join(into, 'run');
      const filled = args.map((a) => (a === DATA_DIR ? dataDir : a === RUN_DIR ? runDir : a));
      const { code, stderr } = await frostInProcess(filled);
      if (code !== 0) throw new Error(`frost ${filled.join(' ')} exited ${code}:\n${stderr}`);
    },
  });
  return { dataDir: join(dir, 'toy'), runDir: join(dir, 'run') };
}
